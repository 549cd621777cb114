/** An OpenAI chat message as the template needs it. */
export interface ChatMessage {
  readonly role: string;
  readonly content: string;
}

/**
 * The default chat template (ChatML-like): every message in order, then the assistant's turn. The
 * gateway renders chats with the same template as `preble engine`, so the prompt it routes on is the
 * prompt the engine caches; a shared system prompt and earlier turns become a shared prefix.
 */
export function renderChat(messages: readonly ChatMessage[]): string {
  let prompt = '';
  for (const m of messages) prompt += `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`;
  return `${prompt}<|im_start|>assistant\n`;
}
