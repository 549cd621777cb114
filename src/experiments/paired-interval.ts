import { Random } from '../core/random.ts';
import { percentileOfSorted } from '../report/stats.ts';

/** Which statistic of a sample a paired interval compares: the mean, or a nearest-rank quantile in [0, 1]. */
export type Statistic = 'mean' | number;

/** The statistic of `values` (sorted in place for a quantile). */
export function statisticOf(values: Float64Array, stat: Statistic): number {
  if (stat !== 'mean') return percentileOfSorted(values.sort(), stat);
  let sum = 0;
  for (let i = 0; i < values.length; i++) sum += values[i]!;
  return sum / values.length;
}

/**
 * A paired bootstrap interval of stat(a) / stat(b), where a[i] and b[i] are one request's values under
 * two runs of the same stream: resampling requests (not values) keeps each request's pair together, so
 * the interval says how far the ratio would move with another draw of the same kind of requests.
 * Percentile interval at `level` (default 0.95) over `resamples` (default 1000) draws, seeded.
 */
export function pairedRatioInterval(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  stat: Statistic,
  options: { readonly resamples?: number; readonly level?: number; readonly seed?: number } = {},
): { readonly lo: number; readonly hi: number } {
  if (a.length !== b.length) throw new Error(`paired samples differ in length: ${a.length} and ${b.length}`);
  if (a.length === 0) throw new Error('paired samples are empty');
  const resamples = options.resamples ?? 1000;
  const level = options.level ?? 0.95;
  const random = new Random(options.seed ?? 0);
  const n = a.length;
  const ra = new Float64Array(n);
  const rb = new Float64Array(n);
  const ratios = new Float64Array(resamples);
  for (let k = 0; k < resamples; k++) {
    for (let i = 0; i < n; i++) {
      const j = Math.floor(random.next() * n);
      ra[i] = a[j]!;
      rb[i] = b[j]!;
    }
    ratios[k] = statisticOf(ra, stat) / statisticOf(rb, stat);
  }
  ratios.sort();
  const tail = (1 - level) / 2;
  return { lo: percentileOfSorted(ratios, tail), hi: percentileOfSorted(ratios, 1 - tail) };
}
