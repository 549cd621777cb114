import type { Tokens } from '../core/types.ts';
import { renderChat } from './chat-template.ts';
import type { PromptInput, PromptTokenizer } from './prompt-tokenizer.ts';

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

/** The default `chars` mode: one token per code point, chats rendered as `preble engine` renders them. */
export const charsTokenizer: PromptTokenizer = {
  name: 'chars',
  async tokenize(input: PromptInput): Promise<Tokens> {
    return encodeChars(input.kind === 'chat' ? renderChat(input.messages) : input.prompt);
  },
};
