import { isCompleted, type RequestRecord } from './record.ts';

export interface InstanceSummary {
  /** Requests routed to the instance (finished or not). */
  readonly requests: number;
  /** Busy seconds / run duration. */
  readonly busyFraction: number;
  /** Cached / prompt tokens over the instance's completed requests. */
  readonly cacheHitRate: number;
}

/**
 * One summary per instance, indexed by instance id: as many as the larger of `busySecondsByInstance`
 * and the highest instance a record names, so idle instances still show up.
 */
export function perInstance(
  records: readonly RequestRecord[],
  busySecondsByInstance: readonly number[],
  durationSeconds: number,
): InstanceSummary[] {
  const count = records.reduce((max, r) => Math.max(max, r.instance + 1), busySecondsByInstance.length);
  const requests = new Array<number>(count).fill(0);
  const prompt = new Array<number>(count).fill(0);
  const cached = new Array<number>(count).fill(0);
  for (const record of records) {
    if (record.instance < 0) continue; // never routed
    requests[record.instance]!++;
    if (!isCompleted(record)) continue;
    prompt[record.instance]! += record.promptTokens;
    cached[record.instance]! += record.cachedTokens;
  }
  return requests.map((routed, instance) => ({
    requests: routed,
    busyFraction: durationSeconds > 0 ? (busySecondsByInstance[instance] ?? 0) / durationSeconds : 0,
    cacheHitRate: prompt[instance]! > 0 ? cached[instance]! / prompt[instance]! : 0,
  }));
}
