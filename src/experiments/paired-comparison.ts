import { percentileOfSorted } from '../report/stats.ts';
import { isCompleted } from '../sim/metrics/record.ts';
import type { SimRecord } from '../sim/record.ts';
import { pairedRatioInterval, type Statistic, statisticOf } from './paired-interval.ts';

/** Within this relative difference two latencies count as even. */
export const EVEN = 0.02;

/** The latency of each completed request of a run that arrived after the warm-up, with its id. */
export interface SteadyLatency {
  readonly ids: readonly string[];
  /** Seconds from arrival to the last token, in the run's record order. */
  readonly latency: Float64Array;
}

/** Each completed request that arrived after the warm-up (as the report's figures count them). */
export function steadyLatency(records: readonly SimRecord[], warmupSeconds: number): SteadyLatency {
  const kept = records.filter((r) => isCompleted(r) && r.arrival >= warmupSeconds);
  return { ids: kept.map((r) => r.id), latency: Float64Array.from(kept, (r) => r.finish - r.arrival) };
}

/** Where the baseline stands against another policy on one statistic. */
export type Standing = 'ahead' | 'even' | 'behind';

/** The standing a ratio (other over baseline) gives the baseline: beyond EVEN either way, else even. */
export function standingOf(ratio: number): Standing {
  if (ratio > 1 + EVEN) return 'ahead';
  if (ratio < 1 - EVEN) return 'behind';
  return 'even';
}

export interface RatioInterval {
  /** The other policy's statistic over the baseline's: above 1, the baseline is faster. */
  readonly ratio: number;
  /** The ratio's paired-bootstrap interval. */
  readonly lo: number;
  readonly hi: number;
  /** Beyond EVEN either way, else even. */
  readonly standing: Standing;
  /** Ahead or behind, and the whole interval lies beyond EVEN on that side. */
  readonly firm: boolean;
}

export interface PairedComparison {
  /** Requests completed (after the warm-up) in both runs: the pairs every figure here is over. */
  readonly n: number;
  readonly mean: RatioInterval;
  readonly p99: RatioInterval;
  /** The other's quantile over the baseline's below the tail (no interval): where the two cross. */
  readonly p50: number;
  readonly p90: number;
  readonly p95: number;
}

export interface PairedComparisonOptions {
  /** Interval level. Default 0.95. */
  readonly level?: number;
  /** Bootstrap draws. Default 1000. */
  readonly resamples?: number;
  /** Seed of the draws. Default 0. */
  readonly seed?: number;
}

/**
 * A baseline against another policy on the same request stream: mean and p99 latency ratios (other
 * over baseline) over the requests both completed, paired by id, each with its paired-bootstrap
 * interval (`pairedRatioInterval`). The interval measures the draw of requests within the runs, not
 * what varies from run to run; a standing is firm only when the interval clears the even band.
 * Undefined when no request is in both.
 */
export function comparePaired(
  baseline: SteadyLatency,
  other: SteadyLatency,
  options: PairedComparisonOptions = {},
): PairedComparison | undefined {
  const at = new Map(other.ids.map((id, i) => [id, i]));
  const mine: number[] = [];
  const theirs: number[] = [];
  baseline.ids.forEach((id, i) => {
    const j = at.get(id);
    if (j === undefined) return;
    mine.push(baseline.latency[i]!);
    theirs.push(other.latency[j]!);
  });
  if (mine.length === 0) return undefined;
  const a = Float64Array.from(theirs);
  const b = Float64Array.from(mine);
  // Sorted once for every quantile below (the bootstrap draws its own samples).
  const sortedA = a.slice().sort();
  const sortedB = b.slice().sort();
  const ratioAt = (statistic: Statistic) =>
    statistic === 'mean'
      ? statisticOf(a, 'mean') / statisticOf(b, 'mean')
      : percentileOfSorted(sortedA, statistic) / percentileOfSorted(sortedB, statistic);
  const ratioOf = (statistic: Statistic): RatioInterval => {
    const ratio = ratioAt(statistic);
    const { lo, hi } = pairedRatioInterval(a, b, statistic, {
      level: options.level ?? 0.95,
      resamples: options.resamples ?? 1000,
      seed: options.seed ?? 0,
    });
    const standing = standingOf(ratio);
    const firm = standing === 'ahead' ? lo > 1 + EVEN : standing === 'behind' ? hi < 1 - EVEN : false;
    return { ratio, lo, hi, standing, firm };
  };
  return {
    n: b.length,
    mean: ratioOf('mean'),
    p99: ratioOf(0.99),
    p50: ratioAt(0.5),
    p90: ratioAt(0.9),
    p95: ratioAt(0.95),
  };
}
