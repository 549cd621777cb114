import type { Random } from '../core/random.ts';
import { type LengthDist, parseLengthDist, sampleLength } from './length-dist.ts';
import { defineWorkload, type RequestDraft } from './stream.ts';
import { randomTokens } from './tokens.ts';
import type { WorkloadOptions, WorkloadRequest } from './types.ts';

/** The `--workload` prefix of the synthetic forms. */
export const SYNTHETIC_PREFIX = 'synthetic:';

/** Input and output lengths of a synthetic workload. */
export interface SyntheticSpec {
  readonly input: LengthDist;
  readonly output: LengthDist;
}

export const SYNTHETIC_FORM = 'synthetic:in=LENGTH,out=LENGTH';

export function isSyntheticForm(workload: string): boolean {
  return workload.startsWith(SYNTHETIC_PREFIX);
}

/**
 * Parses `synthetic:in=LENGTH,out=LENGTH` (see `parseLengthDist` for LENGTH; commas inside a
 * distribution's parentheses belong to it). Both keys are required, each once. Errors are one line
 * naming the form and the bad part, e.g. `workload 'synthetic:in=foo': in=foo: expected a length: ...`.
 */
export function parseSyntheticSpec(workload: string): SyntheticSpec {
  const fail = (part: string, why: string): never => {
    throw new Error(`workload '${workload}': ${part === '' ? '' : `${part}: `}${why}`);
  };
  if (!isSyntheticForm(workload)) fail('', `expected ${SYNTHETIC_FORM}`);
  const body = workload.slice(SYNTHETIC_PREFIX.length);
  const lengths = new Map<string, LengthDist>();
  for (const part of splitTopLevel(body)) {
    const eq = part.indexOf('=');
    const key = eq === -1 ? part.trim() : part.slice(0, eq).trim();
    if (eq === -1 || (key !== 'in' && key !== 'out')) {
      fail(part, `expected in=LENGTH or out=LENGTH (${SYNTHETIC_FORM})`);
    }
    if (lengths.has(key)) fail(part, `${key} given twice`);
    try {
      lengths.set(key, parseLengthDist(part.slice(eq + 1)));
    } catch (error) {
      fail(part, (error as Error).message);
    }
  }
  const input = lengths.get('in');
  const output = lengths.get('out');
  if (!input || !output) fail('', `needs both in= and out= (${SYNTHETIC_FORM})`);
  return { input: input!, output: output! };
}

/** Splits on commas outside parentheses; throws on unbalanced parentheses. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    if (depth < 0) throw new Error(`workload 'synthetic:${text}': unbalanced ')'`);
    if (c === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  if (depth !== 0) throw new Error(`workload 'synthetic:${text}': unclosed '('`);
  parts.push(text.slice(start));
  return parts;
}

/**
 * A workload of independent requests with the given lengths, Poisson at `rps`: every prompt is
 * fresh random tokens (no prefix sharing beyond chance), every random choice from the seed.
 */
export function synthetic(spec: SyntheticSpec | string, options: WorkloadOptions): Iterable<WorkloadRequest> {
  const lengths = typeof spec === 'string' ? parseSyntheticSpec(spec) : spec;
  return lengthWorkload('synthetic', options, (random) => ({
    input: sampleLength(random, lengths.input),
    output: sampleLength(random, lengths.output),
  }));
}

/** One request's lengths. */
export interface LengthPair {
  readonly input: number;
  readonly output: number;
}

/**
 * A workload whose requests differ only in their lengths, drawn by `lengths` from its own random
 * stream; tokens come from a separate stream, so changing a length does not reshuffle the others.
 */
export function lengthWorkload(
  workload: string,
  options: WorkloadOptions,
  lengths: (random: Random) => LengthPair,
): Iterable<WorkloadRequest> {
  return defineWorkload(workload, options, (random) => lengthDrafts(random, lengths));
}

function* lengthDrafts(
  random: Random,
  lengths: (random: Random) => LengthPair,
): Generator<RequestDraft, never> {
  const lengthRandom = random.fork();
  const tokenRandom = random.fork();
  for (;;) {
    const { input, output } = lengths(lengthRandom);
    yield { tokens: randomTokens(tokenRandom, input), outputTokens: output };
  }
}
