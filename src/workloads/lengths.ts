import type { Random } from '../core/random.ts';

/** A length distribution by its mean and standard deviation, clamped to [min, max] after rounding. */
export interface LengthSpec {
  readonly mean: number;
  readonly std: number;
  readonly min?: number;
  readonly max?: number;
}

function clampRound(value: number, spec: LengthSpec): number {
  const min = spec.min ?? 1;
  const max = spec.max ?? Number.POSITIVE_INFINITY;
  return Math.min(max, Math.max(min, Math.round(value)));
}

/** Token lengths are positive and right-skewed, so they are log-normal with the given mean and std. */
export function logNormalLength(random: Random, spec: LengthSpec): number {
  if (spec.std <= 0) return clampRound(spec.mean, spec);
  return clampRound(random.logNormal(spec.mean, spec.std), spec);
}

/** Counts that cluster symmetrically around a mean (steps of a chain) are normal. */
export function normalCount(random: Random, spec: LengthSpec): number {
  return clampRound(random.normal(spec.mean, spec.std), spec);
}
