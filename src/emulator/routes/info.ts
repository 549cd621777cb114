import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import { encodeChars } from '../../text/chars-tokenizer.ts';
import { renderChat } from '../../text/chat-template.ts';
import type { ServerContext } from '../context.ts';
import { parseBody } from '../errors.ts';
import { tokenizeSchema } from '../schemas.ts';
import { checkModel } from './generate.ts';

/** GET /v1/models, GET /health, POST /tokenize, GET /metrics */
export function infoRoutes(app: FastifyInstance, ctx: ServerContext, registry: Registry): void {
  const created = Math.floor(Date.now() / 1000);
  app.get('/v1/models', () => ({
    object: 'list',
    data: [
      {
        id: ctx.model,
        object: 'model',
        created,
        owned_by: 'preble',
        max_model_len: ctx.driver.engine.kvCapacityTokens,
      },
    ],
  }));
  app.get('/health', (_request, reply) => {
    const status = ctx.faults.settings.healthStatus;
    return reply.code(status).send({ status: status < 400 ? 'ok' : 'unhealthy' });
  });
  app.post('/tokenize', (request) => {
    const body = parseBody(tokenizeSchema, request.body);
    if (typeof body.model === 'string') checkModel(ctx, body.model);
    const text = 'prompt' in body ? body.prompt : renderChat(body.messages);
    const tokens = Array.from(encodeChars(text));
    return { tokens, count: tokens.length, max_model_len: ctx.driver.engine.kvCapacityTokens };
  });
  app.get('/metrics', async (_request, reply) => {
    const text = await registry.metrics();
    return reply.type(registry.contentType).send(text);
  });
}
