import type { Tokens } from '../core/types.ts';
import { encodeChars } from './char-tokenizer.ts';
import { renderChat } from './chat-template.ts';
import type { PromptInput, PromptTokenizer } from './prompt-tokenizer.ts';

/** The default `chars` mode: one token per code point, chats rendered as `preble engine` renders them. */
export const charsTokenizer: PromptTokenizer = {
  name: 'chars',
  async tokenize(input: PromptInput): Promise<Tokens> {
    return encodeChars(input.kind === 'chat' ? renderChat(input.messages) : input.prompt);
  },
};
