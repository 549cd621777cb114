import type { Random } from '../../random.ts';

/**
 * Sample an index with probability proportional to exp(-(c - min) / ((max - min) * temperature)),
 * Dynamo's softmax over costs normalised to [0, 1]: the temperature means the same at any cost
 * scale. Equal costs give a uniform pick. Reads costs[0..n).
 */
export function softmaxPickLowest(
  costs: ArrayLike<number>,
  n: number,
  temperature: number,
  random: Random,
): number {
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < n; i++) {
    const c = costs[i]!;
    if (c < min) min = c;
    if (c > max) max = c;
  }
  if (!(max > min)) return random.int(0, n - 1);
  const scale = 1 / ((max - min) * temperature);
  let sum = 0;
  for (let i = 0; i < n; i++) sum += Math.exp(-(costs[i]! - min) * scale);
  let u = random.next() * sum;
  for (let i = 0; i < n; i++) {
    u -= Math.exp(-(costs[i]! - min) * scale);
    if (u < 0) return i;
  }
  return n - 1;
}
