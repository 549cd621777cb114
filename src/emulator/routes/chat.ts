import type { FastifyInstance } from 'fastify';
import { encodeChars } from '../../text/chars-tokenizer.ts';
import { renderChat } from '../../text/chat-template.ts';
import type { ServerContext } from '../context.ts';
import { parseBody } from '../errors.ts';
import { bootstrapOf } from '../pd.ts';
import { chatSchema, DEFAULT_MAX_TOKENS } from '../schemas.ts';
import { checkModel, type ResponseFormat, runGeneration } from './generate.ts';

function chatFormat(model: string): ResponseFormat {
  const chunk = (id: string, created: number, index: number, delta: object, finish: string | null) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: [{ index, delta, logprobs: null, finish_reason: finish }],
  });
  return {
    full: (id, created, choices, usage) => ({
      id,
      object: 'chat.completion',
      created,
      model,
      choices: choices.map((c) => ({
        index: c.index,
        message: { role: 'assistant', content: c.text, refusal: null },
        logprobs: null,
        finish_reason: c.finish,
      })),
      usage,
    }),
    opening: (id, created, index) => [chunk(id, created, index, { role: 'assistant', content: '' }, null)],
    token: (id, created, index, text) => chunk(id, created, index, { content: text }, null),
    closing: (id, created, index, finish) => chunk(id, created, index, {}, finish),
    usage: (id, created, usage) => ({
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      choices: [],
      usage,
    }),
  };
}

/** POST /v1/chat/completions */
export function chatRoute(app: FastifyInstance, ctx: ServerContext): void {
  const format = chatFormat(ctx.model);
  app.post('/v1/chat/completions', (request, reply) => {
    const body = parseBody(chatSchema, request.body);
    checkModel(ctx, body.model);
    return runGeneration(ctx, reply, {
      idPrefix: 'chatcmpl',
      tokens: encodeChars(renderChat(body.messages)),
      maxTokens: body.max_completion_tokens ?? body.max_tokens ?? DEFAULT_MAX_TOKENS,
      choices: body.n ?? 1,
      stop: body.stop,
      stream: body.stream === true,
      includeUsage: body.stream_options?.include_usage === true,
      format,
      kvTransfer: body.kv_transfer_params ?? undefined,
      bootstrap: bootstrapOf(body),
    });
  });
}
