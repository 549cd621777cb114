import { z } from 'zod';
import { chatMessageSchema, stopSchema } from '../text/chat-content.ts';
import { bootstrapSchema, kvTransferParamsSchema } from './pd.ts';

export const MAX_TOKENS_LIMIT = 4096;
export const DEFAULT_MAX_TOKENS = 16;

const maxTokens = z.number().int().min(1).max(MAX_TOKENS_LIMIT).nullish();
const streamOptions = z.object({ include_usage: z.boolean().nullish() }).nullish();
/** Choices per request, as OpenAI bounds them. */
export const MAX_CHOICES = 128;
const choices = z.number().int().min(1).max(MAX_CHOICES).nullish();

export const completionSchema = z.object({
  model: z.string(),
  prompt: z.string().min(1),
  max_tokens: maxTokens,
  stream: z.boolean().nullish(),
  stream_options: streamOptions,
  n: choices,
  stop: stopSchema,
  /** Prefill/decode disaggregation, vLLM-style (see pd.ts). */
  kv_transfer_params: kvTransferParamsSchema,
  /** Prefill/decode disaggregation, SGLang-style (see pd.ts). */
  ...bootstrapSchema,
});
export type CompletionBody = z.infer<typeof completionSchema>;

export const chatSchema = z.object({
  model: z.string(),
  messages: z.array(chatMessageSchema).min(1),
  max_tokens: maxTokens,
  max_completion_tokens: maxTokens,
  stream: z.boolean().nullish(),
  stream_options: streamOptions,
  n: choices,
  stop: stopSchema,
  /** Prefill/decode disaggregation, vLLM-style (see pd.ts). */
  kv_transfer_params: kvTransferParamsSchema,
  /** Prefill/decode disaggregation, SGLang-style (see pd.ts). */
  ...bootstrapSchema,
});
export type ChatBody = z.infer<typeof chatSchema>;

export const tokenizeSchema = z.union([
  z.object({ model: z.string().nullish(), prompt: z.string() }),
  z.object({ model: z.string().nullish(), messages: z.array(chatMessageSchema).min(1) }),
]);
