/**
 * Output-length predictors: what a scheduler may guess about how long an answer will be (issue 15).
 * Pure and seeded: a prediction depends only on the query, the predictor's options and seed, and, for
 * `history`, the finished requests it was shown through `observe`, in order.
 */

/** What a predictor is told about a request. */
export interface LengthQuery {
  readonly id: string;
  readonly promptTokens: number;
  /** The prompt's token ids, when the caller has them (a learned predictor would read them). */
  readonly tokens?: Uint32Array;
  /**
   * The request's key portion: what makes requests resemble each other (a session, a problem, an
   * agent chain). `history` keeps a mean per key.
   */
  readonly key?: string;
  /** The true output length: read by the oracles only (the simulator knows it; a live system does not). */
  readonly trueOutputTokens?: number;
}

/** A guess at a request's total output length (tokens generated from its first to its last). */
export interface LengthPrediction {
  /** Point estimate, at least 1. */
  readonly tokens: number;
  /** A bucketed predictor's range `[low, high)` (TetriInfer's classes); `tokens` lies inside it. */
  readonly bucket?: { readonly low: number; readonly high: number };
}

export interface LengthPredictor {
  readonly name: string;
  /** The prediction at arrival (`now`, seconds). */
  predict(query: LengthQuery, now: number): LengthPrediction;
  /** A finished request's true output length (history-based predictors learn from it). */
  observe?(query: LengthQuery, outputTokens: number, now: number): void;
  /**
   * A new prediction for a request that has generated `generatedSoFar` tokens and so outran
   * `previous` (see `isOutrun`); the result is always beyond `generatedSoFar`. Rules in repredict.ts.
   */
  repredict(query: LengthQuery, generatedSoFar: number, previous: LengthPrediction): LengthPrediction;
}

/**
 * Whether a request that generated `generated` tokens has outrun `prediction`: it reached the
 * bucket's upper end, or, for a point prediction, the point itself (an unfinished request at its
 * predicted length still has at least one token to go, so the prediction was too short).
 */
export function isOutrun(prediction: LengthPrediction, generated: number): boolean {
  return generated >= (prediction.bucket?.high ?? prediction.tokens);
}
