import type { Tokens } from '../core/types.ts';
import type { ChatMessage } from './chat-template.ts';

/** What a request asks the engine to prefill: a completion prompt or a chat to render. */
export type PromptInput =
  | { readonly kind: 'completions'; readonly prompt: string }
  | { readonly kind: 'chat'; readonly messages: readonly ChatMessage[] };

/**
 * Turns a request into the token ids the engine will cache, so that the router's prefix tree sees
 * what the replicas see. Modes: `chars` (needs nothing), `hf:PATH` (a local tokenizer.json with the
 * model's chat template), `backend` (the replica's own /tokenize).
 */
export interface PromptTokenizer {
  /** The mode's name as the CLI spells it (for logs and errors). */
  readonly name: string;
  /** `model`: the request's model (the `backend` mode asks a replica of that model). */
  tokenize(input: PromptInput, model?: string): Promise<Tokens>;
  /** Release what the tokenizer holds (the hf pool's threads); the gateway calls it when it stops. */
  close?(): Promise<void>;
}
