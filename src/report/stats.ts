/** Summary statistics used by benchmarks and reports. */
export interface Percentiles {
  readonly mean: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
}

/** Nearest-rank percentile of sorted values (q in [0, 1]). */
export function percentileOfSorted(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

export function percentiles(values: ArrayLike<number>): Percentiles {
  if (values.length === 0) return { mean: 0, p50: 0, p90: 0, p99: 0 };
  const sorted = Float64Array.from(values).sort();
  let sum = 0;
  for (let i = 0; i < sorted.length; i++) sum += sorted[i]!;
  return {
    mean: sum / sorted.length,
    p50: percentileOfSorted(sorted, 0.5),
    p90: percentileOfSorted(sorted, 0.9),
    p99: percentileOfSorted(sorted, 0.99),
  };
}
