import type { Tokens } from '../core/types.ts';

/**
 * The tokenizer that needs nothing: one token per Unicode code point (the gateway's default `chars`
 * mode, and `preble engine`'s own tokenizer). Prefix relations between texts are kept exactly:
 * texts sharing a prefix of k code points share k tokens.
 */
export function encodeChars(text: string): Tokens {
  const out = new Uint32Array(text.length);
  let n = 0;
  for (const ch of text) out[n++] = ch.codePointAt(0)!;
  return n === out.length ? out : out.slice(0, n);
}

export function decodeChars(tokens: ArrayLike<number>): string {
  let s = '';
  for (let i = 0; i < tokens.length; i++) s += String.fromCodePoint(tokens[i]!);
  return s;
}
