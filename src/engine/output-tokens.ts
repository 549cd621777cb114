import { fmix32 as mix32 } from '../core/hash.ts';
import type { Tokens } from '../core/types.ts';

/**
 * Token ids of what the emulated model "generates". The engine knows how many tokens a request
 * produces, not which, yet they enter its prefix cache when the request finishes (as in SGLang), so
 * they need ids. They are a deterministic function of the prompt (like greedy decoding: the same
 * prompt always continues the same way, so identical requests share their cached outputs), and
 * they all have the top bit set, so they never collide with a workload's vocabulary ids.
 *
 * Two different prompts that hash alike get the same output ids, which is harmless: outputs hang
 * below their own prompt's path in the cache, so they can only be shared by identical prompts.
 */
export const OUTPUT_TOKEN_BIT = 0x80000000;

/** Tokens the prompt hash samples: O(1) per request, whatever the prompt's length. */
const HASH_SAMPLES = 32;

/** A 32-bit hash of the prompt: its length and up to 32 tokens sampled evenly, last one included. */
export function promptHash(prompt: Tokens): number {
  const n = prompt.length;
  let h = 0x811c9dc5 ^ n;
  const step = Math.max(1, Math.floor(n / HASH_SAMPLES));
  for (let i = n - 1, k = 0; i >= 0 && k < HASH_SAMPLES; i -= step, k++)
    h = Math.imul(h ^ prompt[i]!, 0x01000193);
  return mix32(h);
}

/** The id of output token `index` (0-based: index 0 is the first generated token). */
export function outputToken(hash: number, index: number): number {
  return (OUTPUT_TOKEN_BIT | mix32(hash + Math.imul(index + 1, 0x9e3779b9))) >>> 0;
}

/** Generated tokens `from` (inclusive) to `to` (exclusive), in a fresh array. */
export function outputRange(hash: number, from: number, to: number): Tokens {
  const out = new Uint32Array(Math.max(0, to - from));
  for (let j = from; j < to; j++) out[j - from] = outputToken(hash, j);
  return out;
}

/** The prompt followed by its first `outputs` generated tokens, in a fresh array. */
export function withOutputs(prompt: Tokens, hash: number, outputs: number): Tokens {
  const sequence = new Uint32Array(prompt.length + outputs);
  sequence.set(prompt, 0);
  for (let j = 0; j < outputs; j++) sequence[prompt.length + j] = outputToken(hash, j);
  return sequence;
}
