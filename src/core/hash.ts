import type { Tokens } from './types.ts';

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** murmur3's 32-bit finaliser: a bijection that spreads every input bit over the whole word. */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * Hash of the first `limit` tokens: FNV-1a over 32-bit words (one multiply per token, not four),
 * with a shift-xor per word so high token bits also reach the low bits, then fmix32. Non-crypto:
 * it only has to spread prompts evenly over a ring.
 */
export function hashTokens(tokens: Tokens, limit: number, seed = 0): number {
  const n = Math.min(tokens.length, limit);
  let h = (FNV_OFFSET ^ seed) | 0;
  for (let i = 0; i < n; i++) {
    h = Math.imul(h ^ tokens[i]!, FNV_PRIME);
    h ^= h >>> 15;
  }
  return fmix32(h ^ n);
}

/** Hash of a pair of small integers (an instance id and one of its virtual nodes). */
export function hashPair(a: number, b: number, seed = 0): number {
  return fmix32(fmix32((a ^ seed) >>> 0) ^ Math.imul(b + 1, 0x9e3779b1));
}
