/**
 * Closed-form sums over consecutive integers, so that multi-token decode times cost O(1) on hot paths.
 */

/** A function intercept + slope * s. */
export interface Line {
  readonly intercept: number;
  readonly slope: number;
}

/** Sum of line(s) for the integers s = lo..hi; 0 when hi < lo. */
export function sumLine(line: Line, lo: number, hi: number): number {
  if (hi < lo) return 0;
  const count = hi - lo + 1;
  return count * line.intercept + (line.slope * (lo + hi) * count) / 2;
}

/** Sum of max(first(s), second(s)) for s = lo..hi: two lines cross at most once, so two sums suffice. */
export function sumMaxOfLines(first: Line, second: Line, lo: number, hi: number): number {
  if (hi < lo) return 0;
  const slopeGap = first.slope - second.slope;
  const interceptGap = first.intercept - second.intercept;
  if (slopeGap === 0) return sumLine(interceptGap >= 0 ? first : second, lo, hi);
  // first >= second exactly where s is on one side of the crossing point.
  const crossing = -interceptGap / slopeGap;
  if (slopeGap > 0) {
    const split = Math.min(hi + 1, Math.max(lo, Math.ceil(crossing)));
    return sumLine(second, lo, split - 1) + sumLine(first, split, hi);
  }
  const split = Math.min(hi, Math.max(lo - 1, Math.floor(crossing)));
  return sumLine(first, lo, split) + sumLine(second, split + 1, hi);
}
