import type { FastifyInstance } from 'fastify';
import { encodeChars } from '../../text/chars-tokenizer.ts';
import { renderChat } from '../../text/chat-template.ts';
import type { ServerContext } from '../context.ts';
import { parseBody } from '../errors.ts';
import { chatSchema, DEFAULT_MAX_TOKENS } from '../schemas.ts';
import { checkModel, type ResponseFormat, runGeneration } from './generate.ts';

function chatFormat(model: string): ResponseFormat {
  const chunk = (id: string, created: number, delta: object, finish: string | null) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });
  return {
    full: (id, created, text, usage) => ({
      id,
      object: 'chat.completion',
      created,
      model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: text, refusal: null },
          logprobs: null,
          finish_reason: 'length',
        },
      ],
      usage,
    }),
    opening: (id, created) => [chunk(id, created, { role: 'assistant', content: '' }, null)],
    token: (id, created, text) => chunk(id, created, { content: text }, null),
    closing: (id, created) => chunk(id, created, {}, 'length'),
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
      stream: body.stream === true,
      includeUsage: body.stream_options?.include_usage === true,
      format,
    });
  });
}
