import { performance } from 'node:perf_hooks';
import Fastify, { type FastifyInstance } from 'fastify';
import type { GlobalPolicy } from '../core/types.ts';
import { sendError } from './errors.ts';
import { LoadPoller } from './load-poller.ts';
import { GatewayMetrics } from './metrics.ts';
import { proxy } from './proxy.ts';
import { ReplicaSet } from './replicas.ts';

export interface GatewayOptions {
  readonly policy: GlobalPolicy;
  readonly replicas: readonly string[];
  /** KV capacity each replica is assumed to have, in tokens (for the policy's cache model). */
  readonly replicaKvTokens: number;
  /** The model name clients must ask for; undefined: any (the replica decides). */
  readonly model?: string;
  /** Largest request body in bytes. Default 4 MiB. */
  readonly bodyLimit?: number;
  /** Seconds between the policy's background ticks. Default 1. */
  readonly tickSeconds?: number;
  /**
   * Replicas that emulate time faster than real (`preble engine --time-scale`) need the policy's
   * clock sped up alike, so that its window and costs are in the replicas' seconds. Default 1.
   */
  readonly timeScale?: number;
  /** Seconds between polls of the replicas' /metrics for load signals; 0 turns polling off. Default 0.5. */
  readonly pollSeconds?: number;
}

export interface Gateway {
  readonly app: FastifyInstance;
  readonly metrics: GatewayMetrics;
  listen(port: number, host: string): Promise<string>;
  /** Poll every replica's load signals now (tests; the timer does it otherwise). */
  pollNow(): Promise<void>;
  close(): Promise<void>;
}

/** The OpenAI-compatible gateway: routes each request with the policy and proxies the replica's answer. */
export function createGateway(options: GatewayOptions): Gateway {
  const app = Fastify({ bodyLimit: options.bodyLimit ?? 4 * 1024 * 1024, logger: false });
  const metrics = new GatewayMetrics();
  const replicas = new ReplicaSet();
  const timeScale = options.timeScale ?? 1;
  const now = () => (performance.now() / 1000) * timeScale;
  for (const url of options.replicas) {
    const r = replicas.add(url);
    options.policy.instanceAdded(r.id, { kvCapacityTokens: options.replicaKvTokens }, now());
  }
  const ctx = { policy: options.policy, replicas, metrics, now };

  app.setErrorHandler((error, _request, reply) => {
    const status = (error as { statusCode?: number }).statusCode ?? 500;
    if (status === 413)
      return sendError(reply, 413, 'request body too large', 'invalid_request_error', 'body_too_large');
    if (status >= 400 && status < 500) {
      return sendError(reply, status, error instanceof Error ? error.message : 'bad request');
    }
    return sendError(reply, 500, 'internal gateway error', 'server_error');
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(
      reply,
      404,
      `no route for ${request.method} ${request.url}`,
      'invalid_request_error',
      'not_found',
    ),
  );
  const checkModel = (body: unknown, reply: Parameters<typeof sendError>[0]): boolean => {
    const model = (body as { model?: unknown } | null)?.model;
    if (options.model === undefined || typeof model !== 'string' || model === options.model) return true;
    sendError(
      reply,
      404,
      `model '${model}' does not exist`,
      'invalid_request_error',
      'model_not_found',
      'model',
    );
    return false;
  };
  app.post('/v1/completions', (request, reply) =>
    checkModel(request.body, reply) ? proxy('completions', request, reply, ctx) : reply,
  );
  app.post('/v1/chat/completions', (request, reply) =>
    checkModel(request.body, reply) ? proxy('chat', request, reply, ctx) : reply,
  );
  app.get('/v1/models', async () => ({
    object: 'list',
    data:
      options.model === undefined
        ? []
        : [{ id: options.model, object: 'model', created: 0, owned_by: 'preble' }],
  }));
  app.get('/health', async () => ({ status: 'ok', replicas: replicas.all().length }));
  app.get('/metrics', async (_request, reply) => {
    reply.type(metrics.registry.contentType);
    return metrics.registry.metrics();
  });

  const tick = setInterval(() => options.policy.tick(now()), (options.tickSeconds ?? 1) * 1000);
  tick.unref();
  const poller = new LoadPoller(replicas, options.policy, options.replicaKvTokens, now);
  poller.start(options.pollSeconds ?? 0.5);
  return {
    app,
    metrics,
    async listen(port, host) {
      await app.listen({ port, host });
      const address = app.server.address();
      const actual = typeof address === 'object' && address !== null ? address.port : port;
      return `http://${host}:${actual}`;
    },
    pollNow: () => poller.pollAll(),
    async close() {
      clearInterval(tick);
      poller.stop();
      await app.close();
      await replicas.close();
    },
  };
}
