import type { LengthPrediction } from '../length/types.ts';

/** TetriInfer's decode admission policies (§3.4). */
export type DecodeAdmission = 'greedy' | 'reserve-static' | 'reserve-dynamic';

/** What a bucketed prediction counts as: its range's lower end (the paper's, §5.2.3) or its point estimate. */
export type ReserveFrom = 'lower' | 'point';

/** A request on (or arriving at) a decode instance, as the admission rule sees it. */
export interface DecodingRequest {
  readonly id: string;
  /** KV tokens it holds (running) or brings (arrived: prompt + generated - 1). */
  readonly kvTokens: number;
  /** Output tokens generated so far. */
  readonly generated: number;
  /** The length predictor's current guess at its whole output (revised upward when outrun), absent when none. */
  readonly prediction?: LengthPrediction | undefined;
}

/**
 * Predicted tokens still to generate, from the predicted range's lower end ("our policies estimate
 * resource usage using the predicted length range's lower end", §5.2.3; a point prediction is its own
 * lower end); at least 1 while it runs (a request past it may end any step).
 */
export function predictedRemaining(r: DecodingRequest, from: ReserveFrom = 'lower'): number | undefined {
  const p = r.prediction;
  if (p === undefined) return undefined;
  return Math.max(1, (from === 'lower' ? (p.bucket?.low ?? p.tokens) : p.tokens) - r.generated);
}

/**
 * Whether a decode instance admits `candidate` now (its KV already fits: the engine checks that first).
 * `freeKvTokens`: what admission may allocate (free + evictable - reserves).
 * - `greedy` (vLLM): always; the engine preempts (swaps) later if decodes outgrow memory.
 * - `reserve-static`: only if its predicted memory, its KV plus its predicted remaining output, fits
 *   in what is free now ("smaller than the available accelerator memory for the current iteration").
 * - `reserve-dynamic`: only if memory is still free when the batch's shortest remaining job ends: the
 *   growth of every running request and of the candidate until then (each by its prediction, capped
 *   at its own remaining), with the candidate's KV, fits in what is free now.
 * Without a prediction the request counts as greedy would (the rule has nothing to reserve by).
 * `from`: a bucketed prediction's lower end (the paper's) or its point estimate (ours, to measure what
 * the lower end costs).
 */
export function admitsDecode(
  rule: DecodeAdmission,
  candidate: DecodingRequest,
  running: readonly DecodingRequest[],
  freeKvTokens: number,
  from: ReserveFrom = 'lower',
): boolean {
  if (rule === 'greedy') return true;
  const own = predictedRemaining(candidate, from);
  if (own === undefined) return true;
  if (rule === 'reserve-static') return candidate.kvTokens + own <= freeKvTokens;
  let shortest = own;
  for (const r of running) {
    const rest = predictedRemaining(r, from);
    if (rest !== undefined && rest < shortest) shortest = rest;
  }
  let need = candidate.kvTokens + Math.min(own, shortest);
  for (const r of running) need += Math.min(predictedRemaining(r, from) ?? shortest, shortest);
  return need <= freeKvTokens;
}
