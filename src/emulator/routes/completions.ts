import type { FastifyInstance } from 'fastify';
import { encodeChars } from '../../text/chars-tokenizer.ts';
import type { ServerContext } from '../context.ts';
import { parseBody } from '../errors.ts';
import { bootstrapOf } from '../pd.ts';
import { completionSchema, DEFAULT_MAX_TOKENS } from '../schemas.ts';
import { checkModel, type ResponseFormat, runGeneration } from './generate.ts';

function completionFormat(model: string): ResponseFormat {
  const choice = (index: number, text: string, finish: string | null) => ({
    index,
    text,
    logprobs: null,
    finish_reason: finish,
  });
  const chunk = (id: string, created: number, index: number, text: string, finish: string | null) => ({
    id,
    object: 'text_completion',
    created,
    model,
    choices: [choice(index, text, finish)],
  });
  return {
    full: (id, created, choices, usage) => ({
      id,
      object: 'text_completion',
      created,
      model,
      choices: choices.map((c) => choice(c.index, c.text, c.finish)),
      usage,
    }),
    opening: () => [],
    token: (id, created, index, text) => chunk(id, created, index, text, null),
    closing: (id, created, index, finish) => chunk(id, created, index, '', finish),
    usage: (id, created, usage) => ({ id, object: 'text_completion', created, model, choices: [], usage }),
  };
}

/** POST /v1/completions */
export function completionsRoute(app: FastifyInstance, ctx: ServerContext): void {
  const format = completionFormat(ctx.model);
  app.post('/v1/completions', (request, reply) => {
    const body = parseBody(completionSchema, request.body);
    checkModel(ctx, body.model);
    return runGeneration(ctx, reply, {
      idPrefix: 'cmpl',
      tokens: encodeChars(body.prompt),
      maxTokens: body.max_tokens ?? DEFAULT_MAX_TOKENS,
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
