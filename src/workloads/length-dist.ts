import type { Random } from '../core/random.ts';

/**
 * A distribution of token lengths, sampled to an integer and clamped to [min, max] (min >= 1).
 * `uniform` draws integers in [min, max] both inclusive; `normal`, `lognormal` and `exp` are
 * rounded and then clamped, so clamped mass piles up at the bounds (that is what "clamped" means
 * here, not resampling). `lognormal`'s mean and sd are those of the values, not of their log.
 */
export type LengthDist =
  | { readonly kind: 'fixed'; readonly value: number }
  | { readonly kind: 'uniform'; readonly min: number; readonly max: number }
  | {
      readonly kind: 'normal' | 'lognormal';
      readonly mean: number;
      readonly sd: number;
      readonly min: number;
      readonly max: number;
    }
  | { readonly kind: 'exp'; readonly mean: number; readonly min: number; readonly max: number };

/** The longest length a form may ask for (16M tokens): longer is a typo, not a workload. */
export const MAX_LENGTH = 2 ** 24;

/** One length from the distribution. `fixed` draws nothing, so it does not shift the stream. */
export function sampleLength(random: Random, dist: LengthDist): number {
  switch (dist.kind) {
    case 'fixed':
      return dist.value;
    case 'uniform':
      return random.int(dist.min, dist.max);
    case 'normal':
      return clamp(random.normal(dist.mean, dist.sd), dist);
    case 'lognormal':
      return clamp(dist.sd > 0 ? random.logNormal(dist.mean, dist.sd) : dist.mean, dist);
    case 'exp':
      return clamp(random.exponential(1 / dist.mean), dist);
  }
}

function clamp(value: number, dist: { readonly min: number; readonly max: number }): number {
  return Math.min(dist.max, Math.max(dist.min, Math.round(value)));
}

/** The form that `parseLengthDist` reads back to the same distribution. */
export function formatLengthDist(dist: LengthDist): string {
  const bounds = (d: { min: number; max: number }) =>
    `${d.min === 1 ? '' : `,min=${d.min}`}${d.max === MAX_LENGTH ? '' : `,max=${d.max}`}`;
  switch (dist.kind) {
    case 'fixed':
      return `${dist.value}`;
    case 'uniform':
      return `uniform(${dist.min},${dist.max})`;
    case 'normal':
    case 'lognormal':
      return `${dist.kind}(mean=${dist.mean},sd=${dist.sd}${bounds(dist)})`;
    case 'exp':
      return `exp(mean=${dist.mean}${bounds(dist)})`;
  }
}

/** Each form's parameters in positional order; the first `required` of them must be given. */
const FORMS = {
  fixed: { params: ['value'], required: 1 },
  uniform: { params: ['min', 'max'], required: 2 },
  normal: { params: ['mean', 'sd', 'min', 'max'], required: 2 },
  lognormal: { params: ['mean', 'sd', 'min', 'max'], required: 2 },
  exp: { params: ['mean', 'min', 'max'], required: 1 },
} as const;
type FormName = keyof typeof FORMS;

export const LENGTH_DIST_FORMS =
  'N, fixed(N), uniform(MIN,MAX), normal(MEAN,SD[,min=A][,max=B]), ' +
  'lognormal(MEAN,SD[,min=A][,max=B]), exp(MEAN[,min=A][,max=B])';

/**
 * Parses one length form: `N`, `fixed(N)`, `uniform(MIN,MAX)`, `normal(MEAN,SD)`,
 * `lognormal(MEAN,SD)`, `exp(MEAN)`; arguments positional in that order or named (`mean=`, `sd=`,
 * `min=`, `max=`), and `min=` / `max=` clamp the three continuous forms (default min 1, no max).
 * Throws a one-line error saying what is wrong (the caller names the part it came from).
 */
export function parseLengthDist(text: string): LengthDist {
  const fail = (why: string): never => {
    throw new Error(why);
  };
  const trimmed = text.trim();
  if (/^[0-9]+$/.test(trimmed)) return { kind: 'fixed', value: lengthValue(trimmed, 'length', fail) };
  const call = /^([a-z]+)\((.*)\)$/.exec(trimmed);
  if (!call) throw new Error(`expected a length: ${LENGTH_DIST_FORMS}`);
  const name = call[1]!;
  const body = call[2]!;
  if (!Object.hasOwn(FORMS, name)) {
    fail(`unknown distribution '${name}'; valid: ${Object.keys(FORMS).join(', ')}`);
  }
  const form = FORMS[name as FormName];
  const params: readonly string[] = form.params;
  const args = new Map<string, string>();
  let named = false;
  const parts = body.trim() === '' ? [] : body.split(',');
  for (const [index, raw] of parts.entries()) {
    const part = raw.trim();
    const eq = part.indexOf('=');
    let key: string;
    let value: string;
    if (eq === -1) {
      if (named) fail(`positional argument '${part}' after a named one`);
      if (index >= params.length) fail(`${name} takes at most ${params.length} arguments`);
      key = params[index]!;
      value = part;
    } else {
      named = true;
      key = part.slice(0, eq).trim();
      value = part.slice(eq + 1).trim();
      if (!params.includes(key)) fail(`${name} has no parameter '${key}'; it takes ${params.join(', ')}`);
    }
    if (args.has(key)) fail(`${key} given twice`);
    args.set(key, value);
  }
  for (const key of params.slice(0, form.required)) {
    if (!args.has(key)) fail(`${name} needs ${params.slice(0, form.required).join(' and ')}`);
  }
  const number = (key: string) => {
    const raw = args.get(key)!;
    const value = raw === '' ? Number.NaN : Number(raw);
    if (!Number.isFinite(value)) fail(`${key}=${raw} is not a number`);
    return value;
  };
  const length = (key: string, fallback: number) =>
    args.has(key) ? lengthValue(args.get(key)!, key, fail) : fallback;
  const min = length('min', 1);
  const max = length('max', MAX_LENGTH);
  if (min > max) fail(`min ${min} is above max ${max}`);
  switch (name as FormName) {
    case 'fixed':
      return { kind: 'fixed', value: length('value', 1) };
    case 'uniform':
      return { kind: 'uniform', min, max };
    case 'normal':
    case 'lognormal': {
      const mean = number('mean');
      const sd = number('sd');
      if (!(mean > 0)) fail(`mean must be positive, got ${mean}`);
      if (sd < 0) fail(`sd must not be negative, got ${sd}`);
      return { kind: name as 'normal' | 'lognormal', mean, sd, min, max };
    }
    case 'exp': {
      const mean = number('mean');
      if (!(mean > 0)) fail(`mean must be positive, got ${mean}`);
      return { kind: 'exp', mean, min, max };
    }
  }
}

function lengthValue(raw: string, key: string, fail: (why: string) => never): number {
  const value = /^[0-9]+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isInteger(value) || value < 1 || value > MAX_LENGTH) {
    fail(`${key}=${raw}: lengths are whole numbers of tokens from 1 to ${MAX_LENGTH}`);
  }
  return value;
}
