import { fmix32 as mix32 } from '../../core/hash.ts';
import { VOCABULARY_SIZE } from '../tokens.ts';

/** Mooncake's `hash_ids` each stand for one block of this many prompt tokens. */
export const MOONCAKE_BLOCK_TOKENS = 512;

/**
 * Writes the first `length` tokens of hash block `hashId` into `target` at `offset`. The tokens are
 * a pure function of (seed, hashId), never of the block's position, so equal ids give equal tokens
 * wherever they appear. Different ids always differ within the first two tokens (for ids below
 * VOCABULARY_SIZE², about 10⁹): token 0 encodes `id mod V` and token 1 `floor(id / V)`, each shifted
 * by a seed-derived offset; the rest are a counter-based hash of (seed, id, index).
 */
export function writeBlockTokens(
  target: Uint32Array,
  offset: number,
  seed: number,
  hashId: number,
  length: number,
) {
  const vocabulary = VOCABULARY_SIZE;
  const seedKey = mix32(seed ^ 0x5bd1e995);
  const key = mix32(seedKey ^ mix32(hashId >>> 0) ^ mix32(Math.floor(hashId / 0x1_0000_0000) + 0x27d4eb2d));
  for (let i = 0; i < length; i++) {
    let token: number;
    if (i === 0) token = (hashId % vocabulary) + (seedKey % vocabulary);
    else if (i === 1) token = (Math.floor(hashId / vocabulary) % vocabulary) + (mix32(seedKey) % vocabulary);
    else token = mix32((key + Math.imul(i, 0x9e3779b9)) | 0);
    target[offset + i] = token % vocabulary;
  }
}

/** The tokens of one whole (or, with `length`, partial) block. */
export function blockTokens(seed: number, hashId: number, length = MOONCAKE_BLOCK_TOKENS): Uint32Array {
  const tokens = new Uint32Array(length);
  writeBlockTokens(tokens, 0, seed, hashId, length);
  return tokens;
}
