import { performance } from 'node:perf_hooks';
import Fastify, { type FastifyInstance } from 'fastify';
import { collectDefaultMetrics } from 'prom-client';
import { isDisaggregatedPolicyName } from '../core/policies/registry.ts';
import type { GlobalPolicy } from '../core/types.ts';
import { charsTokenizer } from '../text/chars-tokenizer.ts';
import type { PromptTokenizer } from '../text/prompt-tokenizer.ts';
import { adminRoutes } from './admin.ts';
import { Admission } from './admission.ts';
import { FleetActor, type ReplicaLauncher } from './advice/actor.ts';
import { Advisor, type Evaluator } from './advice/advisor.ts';
import type { AdviceConfig } from './advice/config.ts';
import { type ClientKey, KeyStore } from './auth.ts';
import { BackendTokenizer } from './backend-tokenizer.ts';
import {
  type DialectName,
  type GatewayConfig,
  parseGatewayConfig,
  type ReplicaRole,
  rolesProblem,
} from './config.ts';
import { sendError } from './errors.ts';
import { checkHealth } from './health.ts';
import { KvEventSubscriber } from './kv-events.ts';
import { pollLoad } from './load-poller.ts';
import { GatewayMetrics } from './metrics.ts';
import { discoverModels } from './model-discovery.ts';
import { pdDialectsProblem } from './pd-protocol.ts';
import { Periodic, realInterval } from './periodic.ts';
import { type ProxyContext, proxy } from './proxy.ts';
import { type Replica, ReplicaSet, replicaHardware } from './replicas.ts';

export interface ReplicaSpec {
  readonly url: string;
  readonly dialect?: DialectName;
  /** mixed (default), prefill or decode (prefill/decode disaggregation, see docs/gateway.md). */
  readonly role?: ReplicaRole;
  readonly kvTokens?: number;
  /** Its hardware's cost-model preset, when it differs from the gateway's (a fleet of mixed GPUs). */
  readonly costModel?: string | undefined;
  /** The model it serves; absent: `model` below, else read from the replica's /v1/models. */
  readonly model?: string | undefined;
  /** Its KV-cache event endpoint (vLLM's ZMQ format), e.g. tcp://10.0.0.6:5557. */
  readonly kvEvents?: string | undefined;
}

export interface GatewayOptions {
  /** A fresh global policy: one is made for each model's pool of replicas. */
  readonly createPolicy: () => GlobalPolicy;
  readonly replicas: readonly (string | ReplicaSpec)[];
  /** KV capacity each replica is assumed to have, in tokens (for the policy's cache model). */
  readonly replicaKvTokens: number;
  /**
   * The model every replica without its own `model` serves (they are then not asked); undefined:
   * each replica's /v1/models says what it serves.
   */
  readonly model?: string;
  /** Seconds of the policy's clock (the replicas' seconds, see timeScale) between its background ticks. Default 1. */
  readonly tickSeconds?: number;
  /**
   * Replicas that emulate time faster than real (`preble engine --time-scale`) need the policy's
   * clock sped up alike, so that its window and costs are in the replicas' seconds. Default 1.
   */
  readonly timeScale?: number;
  /** Policy-clock seconds between polls of the replicas' /metrics for load signals; 0 turns polling off. Default 0.5. */
  readonly pollSeconds?: number;
  /**
   * How prompts become token ids: a loaded tokenizer, or `backend` (the replicas' /tokenize). Default:
   * chars. The gateway owns it: `close` closes it (the hf pool's threads stop).
   */
  readonly tokenizer?: PromptTokenizer | 'backend';
  readonly limits?: Partial<GatewayConfig['limits']>;
  readonly timeouts?: Partial<GatewayConfig['timeouts']>;
  readonly retries?: Partial<GatewayConfig['retries']>;
  /** Active health checks; `intervalSeconds: 0` turns them off. */
  readonly health?: Partial<Omit<GatewayConfig['health'], 'intervalSeconds'>> & { intervalSeconds?: number };
  readonly breaker?: Partial<GatewayConfig['breaker']>;
  readonly auth?: { readonly keys?: readonly ClientKey[]; readonly adminKey?: string | undefined };
  /** Seconds `close` waits for in-flight requests before cutting them off. Default 30. */
  readonly drainSeconds?: number;
  readonly logLevel?: GatewayConfig['logLevel'];
  readonly logBodies?: boolean;
  /** Add Node's process metrics (heap, CPU, event-loop lag) to /metrics: once per process, so off by default. */
  readonly processMetrics?: boolean;
  /** Live advice (docs/gateway.md): the fleet the planner recommends for the traffic seen; absent: off. */
  readonly advice?: {
    readonly config: AdviceConfig;
    /** Cost-model preset of the replicas, whose capacity is measured. */
    readonly costModel: string;
    readonly seed?: number;
    /** Requests per simulated run, at least (default 200), and seconds of arrivals per run (search default). */
    readonly requests?: number;
    readonly minSeconds?: number;
    /** Capacities of tasks (tests); default: the search's pool on one thread. */
    readonly evaluate?: Evaluator;
  };
  /**
   * Starts replicas the gateway then owns (`preble serve --llama-replicas`; a test double in tests):
   * `actor` adds them, acts on the advice with them when `advice.act`, and `close` stops them.
   */
  readonly launcher?: ReplicaLauncher;
}

export interface Gateway {
  readonly app: FastifyInstance;
  readonly metrics: GatewayMetrics;
  readonly replicas: ReplicaSet;
  listen(port: number, host: string): Promise<string>;
  /** Poll every replica's load signals now (tests; the timer does it otherwise). */
  pollNow(): Promise<void>;
  /** Run a health-check round now (tests; the timer does it otherwise). */
  checkHealthNow(): Promise<void>;
  /** Read the replicas' /v1/models now (tests; the timer and unknown models do it otherwise). */
  discoverModelsNow(): Promise<void>;
  /** Requests the gateway is answering right now (admitted or queued). */
  readonly active: number;
  /** The live advisor; undefined when advice is off. */
  readonly advisor: Advisor | undefined;
  /** Compute the advice now (tests; the timer does it otherwise). */
  adviseNow(): Promise<void>;
  /** The replicas this gateway started (with `launcher`); undefined without one. */
  readonly actor: FleetActor | undefined;
  /** Stop accepting, let in-flight requests finish within the drain deadline, then close. */
  close(): Promise<void>;
}

/** The OpenAI-compatible gateway: routes each request with the policy and proxies the replica's answer. */
export function createGateway(options: GatewayOptions): Gateway {
  const defaults = parseGatewayConfig({ port: 0 });
  const limits = { ...defaults.limits, ...options.limits };
  const timeouts = { ...defaults.timeouts, ...options.timeouts };
  const health = { ...defaults.health, ...options.health };
  const level = options.logLevel ?? defaults.logLevel;
  const app = Fastify({
    bodyLimit: limits.bodyBytes,
    // Logs go to stderr (stdout carries the readiness line); the default serializers never log
    // headers or bodies, so keys and prompts stay out unless logBodies asks for prompts.
    logger: level === 'silent' ? false : { level, stream: process.stderr },
    return503OnClosing: true,
  });
  // A disaggregated policy needs prefill and decode replicas; a colocated one, mixed ones. The policy
  // made to ask its name is the first pool's, so a one-model gateway still makes exactly one.
  let probe: GlobalPolicy | undefined = options.createPolicy();
  const policyName = probe.name;
  const disaggregated = isDisaggregatedPolicyName(policyName);
  const createPolicy = () => {
    const made = probe ?? options.createPolicy();
    probe = undefined;
    return made;
  };
  const checkRoles = (roles: readonly ReplicaRole[]) => rolesProblem(disaggregated, policyName, roles);
  const problem = checkRoles(
    options.replicas.map((s) => (typeof s === 'string' ? 'mixed' : (s.role ?? 'mixed'))),
  );
  if (problem !== undefined) throw new Error(problem);
  const pdProblem = pdDialectsProblem(
    options.replicas.flatMap((spec) =>
      typeof spec === 'string' || (spec.role ?? 'mixed') === 'mixed'
        ? []
        : [{ url: spec.url, role: spec.role ?? 'mixed', dialect: spec.dialect ?? 'preble' }],
    ),
  );
  if (pdProblem !== undefined) throw new Error(pdProblem);
  const metrics = new GatewayMetrics();
  if (options.processMetrics === true) collectDefaultMetrics({ register: metrics.registry });
  const timeScale = options.timeScale ?? 1;
  const now = () => (performance.now() / 1000) * timeScale;
  const subscribers = new Map<number, KvEventSubscriber>();
  const subscribe = (r: Replica) => {
    if (r.kvEvents === undefined) return;
    const label = String(r.id);
    const sub = new KvEventSubscriber(
      r.kvEvents,
      (path, kept) => {
        // Only a replica in its pool's view has a cache the policy tracks.
        const pool = r.viewPool;
        if (r.view === 'gone' || pool === undefined) return;
        pool.policy.instanceEvicted(r.id, path, kept, now());
        metrics.evictions.inc({ replica: label, source: 'kv_events' });
      },
      (error) => app.log.warn({ replica: r.url, err: error }, 'unreadable KV event'),
    );
    sub.start();
    subscribers.set(r.id, sub);
  };
  const replicas = new ReplicaSet(
    createPolicy,
    {
      breaker: { ...defaults.breaker, ...options.breaker },
      connectTimeoutSeconds: timeouts.connectSeconds,
      unhealthyAfter: health.unhealthyAfter,
      onChange: (r, from) => {
        metrics.replicaUp.set({ replica: String(r.id) }, r.view === 'gone' ? 0 : 1);
        if (r.view === 'gone' && from !== 'gone') metrics.breakerOpens.inc({ replica: String(r.id) });
        const entry = { replica: r.url, from, to: r.view };
        if (r.view === 'gone') app.log.warn(entry, 'replica left the routing view');
        else app.log.info(entry, 'replica state changed');
      },
      onAdded: subscribe,
      onRemoved: (r) => {
        subscribers.get(r.id)?.close();
        subscribers.delete(r.id);
      },
    },
    now,
  );
  for (const spec of options.replicas) {
    const s: ReplicaSpec = typeof spec === 'string' ? { url: spec } : spec;
    replicas.add({
      url: s.url,
      dialect: s.dialect ?? 'preble',
      role: s.role ?? 'mixed',
      ...replicaHardware(s.costModel, s.kvTokens, options.replicaKvTokens),
      model: s.model ?? options.model,
      kvEvents: s.kvEvents,
    });
  }
  logFeedback(app, replicas.all());
  const discovery = new Periodic(() => discoverModels(replicas, health.timeoutSeconds));
  const findPool = async (model: string) => {
    const pool = replicas.poolFor(model);
    if (pool !== undefined || replicas.unknownModels().length === 0) return pool;
    // Some replica has not said what it serves yet: ask now before calling the model unknown.
    await discovery.runNow();
    return replicas.poolFor(model);
  };
  const keys = new KeyStore(options.auth?.keys ?? [], now);
  const cancels = new Set<AbortController>();
  const admission = new Admission(
    {
      maxConcurrent: limits.maxConcurrent ?? Number.POSITIVE_INFINITY,
      maxQueue: limits.maxQueue,
      queueTimeoutSeconds: limits.queueTimeoutSeconds,
    },
    now,
  );
  const tokenizer: PromptTokenizer =
    options.tokenizer === 'backend'
      ? new BackendTokenizer(replicas, timeouts.connectSeconds + 5)
      : (options.tokenizer ?? charsTokenizer);
  const adviceOptions = options.advice;
  const replicaAdmin = {
    replicas,
    defaultKvTokens: options.replicaKvTokens,
    defaultModel: options.model,
    discoverModels: () => discovery.runNow(),
    // A fleet may be built one replica at a time: only a role the policy can never use is refused.
    checkRoles: (roles: readonly ReplicaRole[]) => (disaggregated ? undefined : checkRoles(roles)),
  };
  const actor =
    options.launcher === undefined
      ? undefined
      : new FleetActor({
          launcher: options.launcher,
          admin: replicaAdmin,
          min: adviceOptions?.config.min ?? 1,
          max: adviceOptions?.config.max ?? Number.POSITIVE_INFINITY,
          // A replica leaving the fleet gets the time a shutdown gives (--drain).
          drainTimeoutMs: (options.drainSeconds ?? defaults.shutdown.drainSeconds) * 1000,
        });
  const advisor =
    adviceOptions === undefined
      ? undefined
      : new Advisor({
          config: adviceOptions.config,
          question: {
            costModel: adviceOptions.costModel,
            policy: policyName,
            disaggregated,
            seed: adviceOptions.seed ?? 0,
            requests: adviceOptions.requests ?? 200,
            ...(adviceOptions.minSeconds === undefined ? {} : { minSeconds: adviceOptions.minSeconds }),
          },
          now,
          metrics,
          ...(adviceOptions.evaluate === undefined ? {} : { evaluate: adviceOptions.evaluate }),
          ...(actor === undefined ? {} : { act: (advice) => actor.act(advice) }),
        });
  const ctx: ProxyContext = {
    advisor,
    findPool,
    replicas,
    metrics,
    now,
    timeScale,
    timeouts,
    tokenizer,
    admission,
    limits,
    retries: { ...defaults.retries, ...options.retries },
    cancels,
    logBodies: options.logBodies ?? false,
  };
  let active = 0;

  app.setErrorHandler((error, request, reply) => {
    const status = (error as { statusCode?: number }).statusCode ?? 500;
    if (status === 413) {
      metrics.refused.inc({ reason: 'body_too_large' });
      return sendError(
        reply,
        413,
        `request body is larger than ${limits.bodyBytes} bytes`,
        'invalid_request_error',
        'body_too_large',
      );
    }
    if (status >= 400 && status < 500) {
      metrics.refused.inc({ reason: 'bad_request' });
      return sendError(reply, status, error instanceof Error ? error.message : 'bad request');
    }
    request.log.error({ err: error }, 'gateway error');
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
  // Client API keys guard the OpenAI routes; /health and /metrics stay open for probes and scrapers.
  app.addHook('onRequest', async (request, reply) => {
    if (!request.url.startsWith('/v1/')) return;
    const check = keys.check(request.headers.authorization);
    if (check.ok) return;
    metrics.refused.inc({ reason: check.status === 401 ? 'unauthorized' : 'rate_limited' });
    if (check.retryAfterSeconds !== undefined) reply.header('retry-after', String(check.retryAfterSeconds));
    return sendError(
      reply,
      check.status,
      check.message,
      check.status === 401 ? 'authentication_error' : 'rate_limit_error',
      check.status === 401 ? 'invalid_api_key' : 'rate_limit_exceeded',
    );
  });
  const counted = async <T>(fn: () => Promise<T>): Promise<T> => {
    active++;
    try {
      return await fn();
    } finally {
      active--;
    }
  };
  app.post('/v1/completions', (request, reply) => counted(() => proxy('completions', request, reply, ctx)));
  app.post('/v1/chat/completions', (request, reply) => counted(() => proxy('chat', request, reply, ctx)));
  app.get('/v1/models', async () => {
    if (replicas.unknownModels().length > 0) await discovery.runNow();
    return {
      object: 'list',
      data: replicas.servedModels().map((m) => ({ object: 'model', created: 0, owned_by: 'preble', ...m })),
    };
  });
  app.get('/health', async (_request, reply) => {
    const routable = replicas.routable().length;
    // Load balancers in front of the gateway take it out while it has nowhere to send requests.
    return reply
      .code(routable > 0 ? 200 : 503)
      .send({ status: routable > 0 ? 'ok' : 'no_replica', replicas: routable });
  });
  app.get('/metrics', async (_request, reply) => {
    reply.type(metrics.registry.contentType);
    return metrics.registry.metrics();
  });
  const adminKey = options.auth?.adminKey;
  if (adminKey !== undefined)
    adminRoutes(app, {
      ...replicaAdmin,
      adminKey,
      keys,
      now,
      advice: () => advisor?.latest ?? (advisor === undefined ? 'off' : 'pending'),
    });

  // Ticks and load polls are periodic on the policy's clock (the replicas' seconds), as in the
  // simulator; health checks and model discovery are about the network, so they run on real time.
  const tick = setInterval(
    () => {
      for (const pool of replicas.pools()) pool.policy.tick(now());
    },
    realInterval(options.tickSeconds ?? 1, timeScale) * 1000,
  );
  tick.unref();
  const poller = new Periodic(() => pollLoad(replicas, now));
  poller.start(realInterval(options.pollSeconds ?? 0.5, timeScale));
  const checker = new Periodic(() => checkHealth(replicas, health));
  checker.start(health.intervalSeconds);
  // A replica may be restarted with another model: its /v1/models is read again every health round.
  discovery.start(health.intervalSeconds);
  // Advice is periodic on the policy's clock, as ticks; a round never overlaps the one under way.
  const adviser = new Periodic(async () => {
    try {
      await advisor?.tick();
    } catch (error) {
      app.log.warn({ err: error }, 'live advice failed');
    }
  });
  if (advisor !== undefined) adviser.start(realInterval(adviceOptions!.config.intervalSeconds, timeScale));
  const drainMs = (options.drainSeconds ?? defaults.shutdown.drainSeconds) * 1000;
  let closing: Promise<void> | undefined;
  return {
    app,
    metrics,
    replicas,
    get active() {
      return active;
    },
    async listen(port, host) {
      // Know what the replicas serve before the first request (those that do not answer yet are
      // asked again when a request names a model no known replica serves, and every health round).
      await discovery.runNow();
      await app.listen({ port, host });
      const address = app.server.address();
      const actual = typeof address === 'object' && address !== null ? address.port : port;
      return `http://${host}:${actual}`;
    },
    pollNow: () => poller.runNow(),
    checkHealthNow: () => checker.runNow(),
    discoverModelsNow: () => discovery.runNow(),
    advisor,
    adviseNow: () => adviser.runNow(),
    actor,
    close() {
      // Before any await: an act under way starts and adopts nothing from here on.
      actor?.beginClose();
      closing ??= (async () => {
        clearInterval(tick);
        poller.stop();
        checker.stop();
        discovery.stop();
        adviser.stop();
        // Fastify stops listening and answers 503 to new requests on open connections at once.
        const closed = app.close();
        // It closes the connections idle now; one whose request ends during the drain stays open
        // (keep-alive) and would hold the close until the deadline: close each once it is idle.
        const idleSweep = setInterval(() => app.server.closeIdleConnections(), 100);
        idleSweep.unref();
        void closed.finally(() => clearInterval(idleSweep));
        admission.refuseWaiting(new Error('the gateway is shutting down'));
        let timer: NodeJS.Timeout | undefined;
        const deadline = new Promise<'deadline'>((resolve) => {
          timer = setTimeout(() => resolve('deadline'), drainMs);
        });
        if ((await Promise.race([closed, deadline])) === 'deadline') {
          // Past the deadline: streams get an error event, the rest a 503, then connections close.
          for (const c of cancels) c.abort(new Error('shutdown deadline'));
          // A moment for the cut requests to write their last words, then close what is left.
          await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
          app.server.closeAllConnections();
          await closed;
        }
        clearTimeout(timer);
        for (const sub of subscribers.values()) sub.close();
        subscribers.clear();
        await replicas.close();
        // The replicas it started stop with it, whatever the way out.
        await actor?.stopAll();
        await tokenizer.close?.();
      })();
      return closing;
    },
  };
}

/**
 * Say once, at start-up, which feedback the policy gets from each dialect in use (design.md: a face
 * that cannot supply some feedback says so): one line per dialect, and a warning for what is missing.
 */
function logFeedback(app: FastifyInstance, replicas: readonly Replica[]): void {
  const byDialect = new Map<string, Replica[]>();
  for (const r of replicas) byDialect.set(r.dialect.name, [...(byDialect.get(r.dialect.name) ?? []), r]);
  for (const [name, rs] of byDialect) {
    const f = rs[0]!.dialect.feedback;
    // Any replica given a kvEvents endpoint is subscribed to; the rest fall back to cached tokens.
    const withEvents = rs.filter((r) => r.kvEvents !== undefined).length;
    const evictions =
      withEvents === rs.length
        ? 'kv-events'
        : withEvents > 0
          ? `kv-events on ${withEvents} of ${rs.length} replicas, cached-tokens on the rest`
          : 'cached-tokens';
    const entry = { dialect: name, replicas: rs.length, ...f, evictions };
    app.log.info(entry, 'policy feedback available');
    const missing: string[] = [];
    if (f.started === 'first-token') missing.push("requestStarted is the first token's time");
    if (f.started === 'engine-opt-in')
      missing.push(
        "requestStarted is dated only if the engine reports it, else it is the first token's time",
      );
    if (evictions !== 'kv-events') missing.push('evictions are inferred from reported cached tokens');
    if (missing.length > 0) app.log.warn(entry, `${name} replicas: ${[...missing, f.note ?? ''].join('; ')}`);
  }
}
