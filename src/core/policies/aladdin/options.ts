/** Aladdin's knobs (seed 004, Aladdin §4; docs/provisioning.md says what we assume for each). */
export interface AladdinOptions {
  /**
   * γ in [0, 1], the strictness knob of constraint (b): a request counts l_in + γ·l_out of context. 0:
   * only its first decode step must meet ATGT; 1: its last. The paper's normal value, 0.5.
   */
  readonly gamma?: number;
  /** θ in (0, 1]: the share of Eq. 4's context limit, and of the banked decode slack, placement may use (absorbs prediction error). */
  readonly theta?: number;
  /** TTFT and ATGT targets in seconds; 0: the request's own SLO, else the run's (`--slo-ttft/--slo-tpot`), else 1 s and 0.1 s. */
  readonly ttft?: number;
  readonly atgt?: number;
  /** Refit the performance models (Eq. 1-3) from finished requests; false keeps the cost model's. */
  readonly refit?: boolean;
  /** The output length predicted before any request of the input-length bucket has finished (the history predictor's prior). */
  readonly defaultOutputTokens?: number;
  /** Algorithm 2: move requests not started from over- to under-utilized workers at each tick (colocated; the simulator). */
  readonly rebalance?: boolean;
}

export const aladdinDefaults: Required<AladdinOptions> = {
  gamma: 0.5,
  theta: 0.9,
  ttft: 0,
  atgt: 0,
  refit: true,
  defaultOutputTokens: 256,
  rebalance: true,
};

/** Without any SLO given (ours): DistServe's chatbot-class TPOT and a one-second first token. */
export const FALLBACK_SLO = { ttft: 1, tpot: 0.1 } as const;

export function checkAladdinOptions(o: Required<AladdinOptions>): void {
  if (!(o.gamma >= 0 && o.gamma <= 1)) throw new Error(`aladdin: gamma must be in [0, 1], got ${o.gamma}`);
  if (!(o.theta > 0 && o.theta <= 1)) throw new Error(`aladdin: theta must be in (0, 1], got ${o.theta}`);
  if (!(o.ttft >= 0 && o.atgt >= 0)) throw new Error('aladdin: ttft and atgt must be >= 0 (0: the run SLO)');
  if (!(o.defaultOutputTokens >= 1)) throw new Error('aladdin: defaultOutputTokens must be >= 1');
}
