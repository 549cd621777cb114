import type { LengthPrediction } from './types.ts';

/**
 * The two re-prediction rules for a request that outran its prediction (the same for every
 * predictor of one kind, so that policies see one behaviour):
 * - bucketed: the next bucket up, of the same width, `[high, 2 high - low)`, skipping on until it
 *   lies beyond what was generated (TetriInfer has no rule of its own; the next class is the
 *   smallest guess consistent with what is known);
 * - point: double the prediction, and at least one more token than generated (the classic
 *   doubling of unknown job sizes: total work stays within a factor of the truth).
 */
export function nextBucket(previous: LengthPrediction, generated: number): LengthPrediction {
  const bucket = previous.bucket;
  if (bucket === undefined) return doubled(previous, generated);
  const width = Math.max(1, bucket.high - bucket.low);
  let low = bucket.high;
  while (low + width <= generated) low += width;
  return { tokens: midpoint(low, low + width), bucket: { low, high: low + width } };
}

export function doubled(previous: LengthPrediction, generated: number): LengthPrediction {
  return { tokens: Math.max(2 * previous.tokens, generated + 1) };
}

/** A bucket's point estimate: its middle, rounded down, and never below 1 or outside the bucket. */
export function midpoint(low: number, high: number): number {
  return Math.max(1, low, Math.floor((low + high) / 2));
}
