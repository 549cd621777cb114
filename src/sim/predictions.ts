import type { LengthPrediction, LengthPredictor, LengthQuery } from '../core/length/types.ts';
import type { WorkloadRequest } from '../workloads/types.ts';

/**
 * The simulator's side of a length predictor: predicts each request at arrival (the oracles read its
 * true output length, which the simulator knows), revises an outrun prediction for the engines
 * (`EngineOptions.repredict`), and shows the predictor each finished request (`observe`). The key
 * portion is the request's session (a conversation, an agent chain, a problem's samples).
 */
export class SimPredictions {
  private readonly queries = new Map<string, LengthQuery>();

  constructor(private readonly predictor: LengthPredictor) {}

  predict(request: WorkloadRequest, now: number): LengthPrediction {
    const query: LengthQuery = {
      id: request.id,
      promptTokens: request.tokens.length,
      tokens: request.tokens,
      trueOutputTokens: request.outputTokens,
      ...(request.sessionId === undefined ? {} : { key: request.sessionId }),
    };
    this.queries.set(request.id, query);
    return this.predictor.predict(query, now);
  }

  readonly repredict = (id: string, generated: number, previous: LengthPrediction): LengthPrediction => {
    const query = this.queries.get(id);
    if (query === undefined) throw new Error(`length prediction: request '${id}' was never predicted`);
    return this.predictor.repredict(query, generated, previous);
  };

  /** A request refused before it ran: no output to learn from. */
  forget(id: string): void {
    this.queries.delete(id);
  }

  finished(id: string, outputTokens: number, now: number): void {
    const query = this.queries.get(id);
    if (query === undefined) return;
    this.queries.delete(id);
    this.predictor.observe?.(query, outputTokens, now);
  }
}
