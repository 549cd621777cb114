/**
 * Mean arrival rate of a window of arrival times: gaps per second, (n - 1) / (last - first).
 * NaN when there are fewer than two arrivals or they all coincide (no rate to speak of).
 */
export function meanRate(arrivals: readonly number[]): number {
  if (arrivals.length < 2) return Number.NaN;
  const span = arrivals[arrivals.length - 1]! - arrivals[0]!;
  return span > 0 ? (arrivals.length - 1) / span : Number.NaN;
}
