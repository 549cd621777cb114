import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import { Gauge, type Registry } from 'prom-client';
import { costModelPreset } from '../core/cost-model/presets.ts';
import { KV_LINK_CLASSES, type LinkClass } from '../core/fleet/kv-link.ts';
import { isQueuePolicyName, queuePolicyNames } from '../core/replica-queue/registry.ts';
import { Engine } from '../engine/engine.ts';
import type { ServerContext } from './context.ts';
import { DEFAULT_BODY_LIMIT, DEFAULT_MODEL, DEFAULT_QUEUE_POLICY } from './defaults.ts';
import { type CacheObserver, type DriverOptions, WallClockDriver } from './driver.ts';
import { errorBody, HttpError } from './errors.ts';
import { type FaultSettings, Faults, faultHooks } from './faults.ts';
import { KvEventPublisher } from './kv-events.ts';
import { engineMetrics } from './metrics.ts';
import { KvHolder, KvPuller, kvPullRoute } from './pd.ts';
import { requestMetrics } from './request-metrics.ts';
import { chatRoute } from './routes/chat.ts';
import { completionsRoute } from './routes/completions.ts';
import { faultAdminRoutes } from './routes/faults-admin.ts';
import { infoRoutes } from './routes/info.ts';
import { FILLER } from './text.ts';

export { DEFAULT_BODY_LIMIT, DEFAULT_MODEL, DEFAULT_QUEUE_POLICY };

export interface EngineServerOptions {
  /** Cost-model preset, also the served model name. Default mistral-7b-a6000. */
  readonly model?: string;
  /** Override the preset's KV capacity in tokens. */
  readonly kvTokens?: number;
  /** Engine queue policy. Default lpm. */
  readonly queuePolicy?: string;
  /** Engine seconds per wall second (see WallClockDriver). Default 1. */
  readonly timeScale?: number;
  /** Shifts the generated text and seeds the fault draws. Default 0. */
  readonly seed?: number;
  /** Injected misbehaviours, all off by default (see Faults). */
  readonly faults?: Partial<FaultSettings>;
  /** Register POST /_preble/faults to change the faults at run time (tests only). */
  readonly faultAdmin?: boolean;
  /** Largest request body in bytes. Default 4 MiB. */
  readonly bodyLimit?: number;
  /**
   * Publish KV-cache events as vLLM does (ZMQ PUB, msgpack batches) on this endpoint, e.g.
   * `tcp://127.0.0.1:5557` (port 0: a free one; see `kvEventsEndpoint`).
   */
  readonly kvEvents?: string;
  /** Tokens per block in the KV events. Default 16 (vLLM's). */
  readonly kvBlockSize?: number;
  /**
   * Prefill/decode disaggregation (pd.ts): mixed (default) runs whole requests; prefill runs prompts
   * and holds their KV for a decode engine; decode pulls that KV and generates.
   */
  readonly role?: 'mixed' | 'prefill' | 'decode';
  /** The decode role's link to the prefill engines, for the KV's transfer time. Default emulated. */
  readonly kvLink?: LinkClass;
  /** The prefill role: seconds a KV nobody pulls is held before it is freed. Default 60. */
  readonly kvHoldSeconds?: number;
  /** Test hooks for the driver's clock and timer. */
  readonly clock?: DriverOptions['clock'];
  readonly schedule?: DriverOptions['schedule'];
}

export interface EngineServer {
  readonly app: FastifyInstance;
  readonly driver: WallClockDriver;
  readonly registry: Registry;
  readonly model: string;
  readonly faults: Faults;
  /** The prefill role's held KV (tests read its size). */
  readonly kvHolder: KvHolder | undefined;
  /** The KV event publisher once listening, when `kvEvents` was given. */
  readonly kvEvents: KvEventPublisher | undefined;
  /** Start listening (and bind the KV event socket); resolves to the bound address (port 0 picks a free one). */
  listen(port: number, host?: string): Promise<{ host: string; port: number; url: string }>;
  /** Stop accepting, wait for in-flight requests up to `graceMs`, then drop what is left. */
  close(graceMs?: number): Promise<void>;
}

/**
 * An emulated replica (what `preble engine` serves; the folder is `emulator` because `src/engine` is the
 * pure engine model it runs): one Engine on a wall clock behind an OpenAI-compatible Fastify server.
 */
export function createEngineServer(options: EngineServerOptions = {}): EngineServer {
  const model = options.model ?? DEFAULT_MODEL;
  const queuePolicy = options.queuePolicy ?? DEFAULT_QUEUE_POLICY;
  if (!isQueuePolicyName(queuePolicy))
    throw new Error(`unknown queue policy '${queuePolicy}'; valid: ${queuePolicyNames.join(', ')}`);
  const seed = Math.abs(Math.trunc(options.seed ?? 0));
  const faults = new Faults(options.faults, seed);
  const costModel = costModelPreset(model, { kvCapacityTokens: options.kvTokens });
  const role = options.role ?? 'mixed';
  const engine = new Engine({ costModel, queuePolicy, role });
  const registry = engineMetrics(engine, model);
  let publisher: KvEventPublisher | undefined;
  const cacheObserver: CacheObserver | undefined =
    options.kvEvents === undefined
      ? undefined
      : {
          stored: (tokens) => publisher?.stored(tokens),
          evicted: (e) => publisher?.evicted(e),
          flush: () => publisher?.flush(),
        };
  if (cacheObserver !== undefined)
    new Gauge({
      name: 'preble:kv_event_subscribers',
      help: 'Subscribers connected to the KV event socket',
      registers: [registry],
      collect() {
        this.set(publisher?.subscribers ?? 0);
      },
    });
  const driver = new WallClockDriver(engine, {
    timeScale: options.timeScale,
    clock: options.clock,
    schedule: options.schedule,
    observer: requestMetrics(registry, model, engine.kvCapacityTokens),
    ...(cacheObserver === undefined ? {} : { cacheObserver }),
  });
  const kvHolder = role === 'prefill' ? new KvHolder(driver, options.kvHoldSeconds ?? 60) : undefined;
  const kvPuller =
    role === 'decode'
      ? new KvPuller(
          KV_LINK_CLASSES[options.kvLink ?? 'emulated'],
          costModel.kvBytesPerToken,
          driver.timeScale,
        )
      : undefined;
  const ctx: ServerContext = {
    driver,
    model,
    textOffset: seed % FILLER.length,
    faults,
    role,
    kvHolder,
    kvPuller,
  };
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

  // The generation routes get their own context, so the fault hooks run for them alone.
  app.register(async (generation) => {
    faultHooks(generation, faults);
    completionsRoute(generation, ctx);
    chatRoute(generation, ctx);
  });
  infoRoutes(app, ctx, registry);
  if (kvHolder !== undefined) kvPullRoute(app, kvHolder);
  // SGLang's server info, as its router reads it: the role and the prefill's bootstrap port (here the
  // HTTP port itself: the room pull route lives on it).
  app.get('/get_server_info', async () => ({
    disaggregation_mode: role === 'mixed' ? 'null' : role,
    disaggregation_bootstrap_port: kvHolder?.address?.port ?? null,
  }));
  if (options.faultAdmin === true) faultAdminRoutes(app, faults);
  // Hung and stalled requests never end by themselves: close them instead of waiting out the grace.
  app.addHook('preClose', (done) => {
    faults.releaseHeld();
    done();
  });

  return {
    app,
    driver,
    registry,
    model,
    faults,
    kvHolder,
    get kvEvents() {
      return publisher;
    },
    async listen(port, host = '127.0.0.1') {
      if (options.kvEvents !== undefined && publisher === undefined)
        publisher = await KvEventPublisher.bind(options.kvEvents, options.kvBlockSize);
      await app.listen({ port, host });
      const address = app.server.address();
      if (address === null || typeof address === 'string') throw new Error('server: no TCP address');
      const shownHost = host.includes(':') ? `[${host}]` : host;
      if (kvHolder !== undefined) kvHolder.address = { host, port: address.port };
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
      kvHolder?.close();
      driver.close();
      publisher?.close();
    },
  };
}
