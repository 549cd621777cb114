import type { InstanceId } from '../core/types.ts';

/**
 * What the simulator records for one request (times in seconds; -1 until it happens). A superset of
 * the metrics module's RequestRecord: the branch and the policy's predicted cached tokens are kept
 * to compare what the policy believed with what the engine did.
 */
export interface SimRecord {
  readonly id: string;
  readonly workload: string;
  /** Where it ran: where it was routed, or where a queued move (Aladdin's re-balancing) took it before it started. */
  instance: InstanceId;
  readonly branch: string;
  readonly arrival: number;
  readonly dispatch: number;
  /** Admitted into a batch (queueing ends). */
  start: number;
  firstToken: number;
  finish: number;
  readonly promptTokens: number;
  readonly predictedCachedTokens: number;
  /** Prompt tokens the engine served from its cache. */
  cachedTokens: number;
  outputTokens: number;
  /**
   * Disaggregation (a request routed with `decode`; -1 otherwise, and for one that ended at its prefill):
   * the instance that decoded it, its prefill's end (= its first token), when its KV transfer started
   * and when the KV was on the decode instance, and when the decode instance admitted it. Its prefill
   * started at `start`, on `instance`.
   */
  decodeInstance: InstanceId;
  prefillEnd: number;
  transferStart: number;
  transferEnd: number;
  decodeStart: number;
  /**
   * Disaggregation: the KV tokens its transfer moved (the prompt's KV less the prefix the decode
   * instance cached at the transfer's start) and their bytes; -1 without a transfer.
   */
  movedKvTokens: number;
  movedKvBytes: number;
}

/**
 * A disaggregated request's journey as its seven marks, in order: arrival, prefill start, prefill end,
 * transfer start, transfer end, decode start, finish (the stages are the gaps between them).
 */
export function journeyMarks(r: SimRecord): number[] {
  return [r.arrival, r.start, r.prefillEnd, r.transferStart, r.transferEnd, r.decodeStart, r.finish];
}
