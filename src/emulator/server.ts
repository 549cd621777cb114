import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import { costModelPreset } from '../core/cost-model/presets.ts';
import { isQueuePolicyName } from '../core/local/factory.ts';
import { queuePolicyNames } from '../core/local/types.ts';
import { Engine } from '../engine/engine.ts';
import type { ServerContext } from './context.ts';
import { type DriverOptions, WallClockDriver } from './driver.ts';
import { errorBody, HttpError } from './errors.ts';
import { engineMetrics } from './metrics.ts';
import { chatRoute } from './routes/chat.ts';
import { completionsRoute } from './routes/completions.ts';
import { infoRoutes } from './routes/info.ts';
import { FILLER } from './text.ts';

export const DEFAULT_MODEL = 'mistral-7b-a6000';
export const DEFAULT_QUEUE_POLICY = 'lpm';
export const DEFAULT_BODY_LIMIT = 4 * 1024 * 1024;

export interface EngineServerOptions {
  /** Cost-model preset, also the served model name. Default mistral-7b-a6000. */
  readonly model?: string;
  /** Override the preset's KV capacity in tokens. */
  readonly kvTokens?: number;
  /** Engine queue policy. Default lpm. */
  readonly queuePolicy?: string;
  /** Engine seconds per wall second (see WallClockDriver). Default 1. */
  readonly timeScale?: number;
  /** Shifts the generated text. Default 0. */
  readonly seed?: number;
  /** Largest request body in bytes. Default 4 MiB. */
  readonly bodyLimit?: number;
  /** Test hooks for the driver's clock and timer. */
  readonly clock?: DriverOptions['clock'];
  readonly schedule?: DriverOptions['schedule'];
}

export interface EngineServer {
  readonly app: FastifyInstance;
  readonly driver: WallClockDriver;
  readonly registry: Registry;
  readonly model: string;
  /** Start listening; resolves to the bound address (port 0 picks a free one). */
  listen(port: number, host?: string): Promise<{ host: string; port: number; url: string }>;
  /** Stop accepting, wait for in-flight requests up to `graceMs`, then drop what is left. */
  close(graceMs?: number): Promise<void>;
}

/** An emulated replica: one Engine on a wall clock behind an OpenAI-compatible Fastify server. */
export function createEngineServer(options: EngineServerOptions = {}): EngineServer {
  const model = options.model ?? DEFAULT_MODEL;
  const queuePolicy = options.queuePolicy ?? DEFAULT_QUEUE_POLICY;
  if (!isQueuePolicyName(queuePolicy))
    throw new Error(`unknown queue policy '${queuePolicy}'; valid: ${queuePolicyNames.join(', ')}`);
  const costModel = costModelPreset(model, { kvCapacityTokens: options.kvTokens });
  const engine = new Engine({ costModel, queuePolicy });
  const driver = new WallClockDriver(engine, {
    timeScale: options.timeScale,
    clock: options.clock,
    schedule: options.schedule,
  });
  let counter = 0;
  const ctx: ServerContext = {
    driver,
    model,
    textOffset: Math.abs(Math.trunc(options.seed ?? 0)) % FILLER.length,
    nextId: (prefix) => `${prefix}-${(++counter).toString(36)}`,
  };
  const registry = engineMetrics(engine, model);
  const app = Fastify({ logger: false, bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT });

  app.setErrorHandler((error: FastifyError | HttpError, _request, reply) => {
    if (error instanceof HttpError) return reply.code(error.statusCode).send(error.body());
    const status = error.statusCode ?? 500;
    if (status >= 500) {
      return reply.code(status).send(errorBody(error.message, 'server_error', null, null));
    }
    const code =
      error.code === 'FST_ERR_CTP_BODY_TOO_LARGE'
        ? 'request_too_large'
        : error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error instanceof SyntaxError
          ? 'invalid_json'
          : (error.code ?? null);
    return reply.code(status).send(errorBody(error.message, 'invalid_request_error', null, code));
  });
  app.setNotFoundHandler((request, reply) =>
    reply
      .code(404)
      .send(
        errorBody(
          `no route for ${request.method} ${request.url}`,
          'invalid_request_error',
          null,
          'not_found',
        ),
      ),
  );

  completionsRoute(app, ctx);
  chatRoute(app, ctx);
  infoRoutes(app, ctx, registry);

  return {
    app,
    driver,
    registry,
    model,
    async listen(port, host = '127.0.0.1') {
      await app.listen({ port, host });
      const address = app.server.address();
      if (address === null || typeof address === 'string') throw new Error('server: no TCP address');
      const shownHost = host.includes(':') ? `[${host}]` : host;
      return { host, port: address.port, url: `http://${shownHost}:${address.port}` };
    },
    async close(graceMs = 5000) {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          driver.close();
          app.server.closeAllConnections();
          resolve();
        }, graceMs);
      });
      await Promise.race([app.close(), deadline]);
      clearTimeout(timer);
      driver.close();
    },
  };
}
