/**
 * The output-length predictor Aladdin places with: the historical output length for the input length,
 * re-predicted when a request outruns it. The contract is issue 15's `LengthPredictor` (src/core/length);
 * until it is plugged in, the policy predicts the running mean of finished outputs (max_tokens when the
 * client gives one), and on an overrun doubles what it has run.
 */
import { RunningMean } from '../support/running-mean.ts';

export interface OutputPredictor {
  predict(inputTokens: number): number;
  observe(inputTokens: number, outputTokens: number): void;
  /** A request of `inputTokens` has already run `pastTokens` output tokens, its prediction outrun. */
  repredict(inputTokens: number, pastTokens: number): number;
}

export class MeanOutputPredictor implements OutputPredictor {
  private readonly mean: RunningMean;

  constructor(prior: number) {
    this.mean = new RunningMean(prior, 1000);
  }

  predict(_inputTokens: number): number {
    return Math.max(1, Math.round(this.mean.mean));
  }

  observe(_inputTokens: number, outputTokens: number): void {
    this.mean.add(outputTokens);
  }

  repredict(_inputTokens: number, pastTokens: number): number {
    return Math.max(pastTokens + 1, 2 * pastTokens);
  }
}
