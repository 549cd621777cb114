import type { InstanceLoadSignal } from '../../types.ts';

/** What Llumnix's freeness of one instance is computed from. */
export interface FreenessInput {
  /** KV capacity M, tokens. */
  readonly capacityTokens: number;
  /** The last polled signal (undefined before the first poll). */
  readonly signal: InstanceLoadSignal | undefined;
  /** Requests and prompt tokens sent there since that poll (the router's own knowledge). */
  readonly sentRequests: number;
  readonly sentTokens: number;
  /** Router-counted in-flight requests (the batch size before the first poll). */
  readonly inflight: number;
  /** Headroom the instance's high-priority requests add to its virtual usage. */
  readonly headroomTokens: number;
  /** A draining (terminating) instance: infinite virtual usage, so it migrates everything out. */
  readonly draining: boolean;
}

/**
 * Llumnix's freeness (OSDI 24, §4.4.2): F = (M - sum V) / B, the decode iterations the batch could still
 * run with the memory left, from each request's virtual usage V:
 * - a running request: its physical KV (our polled `usedKvTokens`, summed);
 * - the head-of-line queued request: its demand, which makes an instance whose queue is blocked look
 *   loaded, so requests migrate away and free room for it (de-fragmentation). Our signal has no head
 *   demand: we take the mean queued prefill per waiting request (ASSUMPTION);
 * - a high-priority request: a headroom on top (performance isolation);
 * - a terminating instance: infinite (it migrates out all it has).
 * Requests sent since the poll count as queued demand and in the batch size. B = 0 counts as 1.
 */
export function llumnixFreeness(x: FreenessInput): number {
  if (x.draining) return Number.NEGATIVE_INFINITY;
  const s = x.signal;
  const head = s === undefined || s.waiting === 0 ? 0 : s.queuedPrefillTokens / s.waiting;
  const used = (s?.usedKvTokens ?? 0) + head + x.sentTokens + x.headroomTokens;
  const batch = (s === undefined ? x.inflight : s.running + x.sentRequests) || 1;
  return (x.capacityTokens - used) / batch;
}
