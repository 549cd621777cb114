import { z } from 'zod';
import { chatMessageSchema, stopSchema } from '../text/chat-content.ts';
import { firstIssue } from '../util/zod-issue.ts';

/** The fields the gateway reads; every other field passes through to the replica unchanged. */
const common = {
  model: z.string().min(1),
  stream: z.boolean().optional(),
  stream_options: z.object({ include_usage: z.boolean().optional() }).passthrough().nullish(),
  // The upper bound is the gateway's configured limit, checked after parsing.
  max_tokens: z.number().int().min(1).optional(),
  // Passed on to the replica as given (shape checked here): several choices, stop strings.
  n: z.number().int().min(1).max(128).nullish(),
  stop: stopSchema,
};

const completion = z.object({ ...common, prompt: z.string() }).passthrough();
// Content given as parts is joined into one string here, so the replica caches the prompt the
// gateway tokenized and routed on.
const chat = z.object({ ...common, messages: z.array(chatMessageSchema).min(1) }).passthrough();

export interface CompletionBody {
  readonly model: string;
  readonly prompt?: string;
  readonly messages?: { role: string; content: string }[];
  readonly stream?: boolean;
  readonly stream_options?: { include_usage?: boolean } | null;
  readonly max_tokens?: number;
  readonly [key: string]: unknown;
}

export type Parsed =
  | { ok: true; body: CompletionBody }
  | { ok: false; message: string; param: string | null };

/** Validate an OpenAI completions or chat body; the first problem becomes the error message. */
export function parseCompletionBody(kind: 'completions' | 'chat', body: unknown): Parsed {
  const result = (kind === 'chat' ? chat : completion).safeParse(body);
  if (result.success) return { ok: true, body: result.data as CompletionBody };
  const { param, message } = firstIssue(result.error);
  return { ok: false, message, param };
}
