import { isCompleted, type RequestRecord, tpotOf, ttftOf } from './record.ts';

/** Latency targets in seconds. */
export interface Slo {
  readonly ttft: number;
  readonly tpot: number;
}

/** Shares of requests (0..1) meeting each target, and both. */
export interface SloAttainment {
  readonly ttft: number;
  readonly tpot: number;
  readonly both: number;
}

/**
 * Shares of ALL records meeting the SLO: an unfinished request meets neither target (it would
 * otherwise flatter an overloaded run), nor do the `refused` requests that were never placed (no
 * record; too large for every instance, or the one chosen). A request with one output token has no TPOT and meets that
 * target trivially. Meeting means `<=`. No requests: every share is 0.
 */
export function sloAttainment(records: readonly RequestRecord[], slo: Slo, refused = 0): SloAttainment {
  if (records.length + refused === 0) return { ttft: 0, tpot: 0, both: 0 };
  let ttft = 0;
  let tpot = 0;
  let both = 0;
  for (const record of records) {
    if (!isCompleted(record)) continue;
    const ttftMet = ttftOf(record) <= slo.ttft;
    const tpotMet = (tpotOf(record) ?? 0) <= slo.tpot;
    if (ttftMet) ttft++;
    if (tpotMet) tpot++;
    if (ttftMet && tpotMet) both++;
  }
  const n = records.length + refused;
  return { ttft: ttft / n, tpot: tpot / n, both: both / n };
}
