import type { Random } from '../core/random.ts';
import type { Tokens } from '../core/types.ts';

/** Token ids are drawn from [0, VOCABULARY_SIZE), the size of a Llama-2/Mistral vocabulary. */
export const VOCABULARY_SIZE = 32000;

/** A block of independent uniform token ids (two blocks share a first token with chance 1/32000). */
export function randomTokens(random: Random, length: number): Tokens {
  const tokens = new Uint32Array(length);
  for (let i = 0; i < length; i++) tokens[i] = random.int(0, VOCABULARY_SIZE - 1);
  return tokens;
}

/** One fresh array holding the parts in order, so that requests never alias a shared block. */
export function concatTokens(parts: readonly Tokens[]): Tokens {
  let length = 0;
  for (const part of parts) length += part.length;
  const tokens = new Uint32Array(length);
  let offset = 0;
  for (const part of parts) {
    tokens.set(part, offset);
    offset += part.length;
  }
  return tokens;
}
