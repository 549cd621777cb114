import { Pool } from 'undici';
import { costModelPreset } from '../core/cost-model/presets.ts';
import type { CostModel } from '../core/cost-model/types.ts';
import type { GlobalPolicy } from '../core/types.ts';
import { type BreakerOptions, CircuitBreaker } from './breaker.ts';
import type { DialectName, ReplicaRole } from './config.ts';
import { type Dialect, dialectOf } from './dialects.ts';

/** Where a replica stands in the policy's view. */
type ViewState = 'active' | 'draining' | 'gone';

/** One entry of an OpenAI `/v1/models` list (its other fields are kept as the replica gave them). */
export interface ModelEntry {
  readonly id: string;
  readonly [field: string]: unknown;
}

/**
 * The replicas that serve one model, routed by their own policy instance (its prefix tree, window
 * and in-flight counts belong to this pool alone). `model` undefined: replicas that cannot say what
 * they serve (no usable /v1/models); they take requests for a model no named pool serves.
 */
export interface ModelPool {
  readonly model: string | undefined;
  readonly policy: GlobalPolicy;
}

/** One upstream replica: address, dialect, connection pool and health. */
export interface Replica {
  readonly id: number;
  readonly url: string;
  readonly dialect: Dialect;
  /** mixed: whole requests; prefill / decode: one leg of a disaggregated request (InstanceInfo.role). */
  readonly role: ReplicaRole;
  readonly kvTokens: number;
  /** Its hardware's cost model, when configured (a fleet of mixed GPUs; InstanceInfo.costModel). */
  readonly costModel: CostModel | undefined;
  /** Where the replica publishes its KV-cache events (vLLM's ZMQ format); undefined: none. */
  readonly kvEvents: string | undefined;
  readonly pool: Pool;
  /** A small pool of its own for health checks, metrics and /tokenize, so busy traffic never starves them. */
  readonly control: Pool;
  readonly breaker: CircuitBreaker;
  /** The active health check's verdict (optimistic until the first check). */
  healthy: boolean;
  healthFailures: number;
  /** Drained through the admin API: no new requests, in-flight ones finish. */
  draining: boolean;
  /** Removed through the admin API: gone for good (its id is never reused). */
  removed: boolean;
  /** Requests the gateway has on this replica right now. */
  inflight: number;
  view: ViewState;
  /** The model name given in the configuration (then never asked); undefined: read from its /v1/models. */
  readonly configuredModel: string | undefined;
  /** What it serves, as it listed them (the pool is the first's); empty while unknown or for `any`. */
  models: readonly ModelEntry[];
  /** The pool it belongs to; undefined while its model is unknown (it takes no requests then). */
  modelPool: ModelPool | undefined;
  /** The pool whose policy has it in view now (differs from modelPool only inside a move). */
  viewPool: ModelPool | undefined;
}

export interface ReplicaSetOptions {
  readonly breaker: BreakerOptions;
  readonly connectTimeoutSeconds: number;
  /** Consecutive failed health checks that take a replica out. */
  readonly unhealthyAfter: number;
  /** Called whenever a replica's view state changes (metrics, logs). */
  readonly onChange?: (replica: Replica, from: ViewState) => void;
  /** Called once a replica was added (at start-up or through the admin API). */
  readonly onAdded?: (replica: Replica) => void;
  /** Called once a replica was removed for good. */
  readonly onRemoved?: (replica: Replica) => void;
}

export interface NewReplica {
  readonly url: string;
  readonly dialect: DialectName;
  /** Default mixed. */
  readonly role?: ReplicaRole | undefined;
  readonly kvTokens: number;
  /** Its hardware's cost model, if it differs from the gateway's (`replicaHardware`). */
  readonly costModel?: CostModel | undefined;
  /** The model it serves, if configured; else the gateway reads its /v1/models. */
  readonly model?: string | undefined;
  /** Its KV-cache event endpoint (`tcp://host:port`), if it publishes one. */
  readonly kvEvents?: string | undefined;
}

/**
 * A replica's hardware from its entry: its cost-model preset, when named, and its KV tokens (given, else
 * the preset's, else the gateway's default).
 */
export function replicaHardware(
  preset: string | undefined,
  kvTokens: number | undefined,
  defaultKvTokens: number,
): { costModel?: CostModel; kvTokens: number } {
  if (preset === undefined) return { kvTokens: kvTokens ?? defaultKvTokens };
  const costModel = costModelPreset(preset, kvTokens === undefined ? {} : { kvCapacityTokens: kvTokens });
  return { costModel, kvTokens: costModel.kvCapacityTokens };
}

/**
 * The replicas the gateway forwards to, by instance id, grouped into pools by the model they serve,
 * and the one place that keeps each pool policy's view in step with their health: a replica is in
 * its pool's view while its model is known, it is healthy, its breaker is not open and it was not
 * removed; leaving the view forgets its cached prefixes (it may come back as a fresh engine), and it
 * is re-admitted once healthy again. Instance ids are unique across pools.
 */
export class ReplicaSet {
  private readonly replicas: Replica[] = [];
  private readonly byModel = new Map<string | undefined, ModelPool>();

  constructor(
    /** A fresh policy instance for each pool. */
    private readonly createPolicy: () => GlobalPolicy,
    private readonly options: ReplicaSetOptions,
    private readonly now: () => number,
  ) {}

  add(spec: NewReplica): Replica {
    const parsed = new URL(spec.url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
      throw new Error(`replica URL must be http or https, got '${spec.url}'`);
    const replica: Replica = {
      id: this.replicas.length,
      url: parsed.origin,
      dialect: dialectOf(spec.dialect),
      role: spec.role ?? 'mixed',
      kvTokens: spec.kvTokens,
      costModel: spec.costModel,
      kvEvents: spec.kvEvents,
      pool: new Pool(parsed.origin, {
        connections: 64,
        pipelining: 1,
        keepAliveTimeout: 30_000,
        connect: { timeout: this.options.connectTimeoutSeconds * 1000 },
      }),
      control: new Pool(parsed.origin, {
        connections: 2,
        connect: { timeout: this.options.connectTimeoutSeconds * 1000 },
      }),
      breaker: new CircuitBreaker(this.options.breaker),
      healthy: true,
      healthFailures: 0,
      draining: false,
      removed: false,
      inflight: 0,
      view: 'gone',
      configuredModel: spec.model,
      models: [],
      modelPool: undefined,
      viewPool: undefined,
    };
    this.replicas.push(replica);
    if (spec.model !== undefined) replica.modelPool = this.poolOf(spec.model);
    this.reconcile(replica);
    this.options.onAdded?.(replica);
    return replica;
  }

  /**
   * What a replica's /v1/models said: the models it lists (it joins the first one's pool), or `any`
   * (it answered without a usable list). A replica whose model changed moves to the new pool.
   */
  setModels(replica: Replica, models: readonly ModelEntry[] | 'any'): void {
    if (replica.configuredModel !== undefined) return;
    replica.models = models === 'any' ? [] : models;
    replica.modelPool = this.poolOf(models === 'any' ? undefined : models[0]?.id);
    this.reconcile(replica);
  }

  /** Every pool formed so far (one per model any replica has served). */
  pools(): ModelPool[] {
    return [...this.byModel.values()];
  }

  /**
   * The pool for a request's model: the pool of that name, else one whose replicas list it (a
   * replica may list several, e.g. vLLM's LoRA adapters), else the pool of replicas that cannot
   * say what they serve; undefined: no replica known to serve it.
   */
  poolFor(model: string): ModelPool | undefined {
    const named = this.byModel.get(model);
    if (named !== undefined) return named;
    for (const r of this.replicas) if (!r.removed && r.models.some((m) => m.id === model)) return r.modelPool;
    return this.byModel.get(undefined);
  }

  /** Present replicas whose model is not known yet (never answered /v1/models). */
  unknownModels(): Replica[] {
    return this.replicas.filter((r) => !r.removed && r.modelPool === undefined);
  }

  /** The models the present replicas serve, one entry per id (the first replica's), in order. */
  servedModels(): ModelEntry[] {
    const out = new Map<string, ModelEntry>();
    for (const r of this.replicas) {
      if (r.removed) continue;
      const entries = r.configuredModel === undefined ? r.models : [{ id: r.configuredModel }];
      for (const m of entries) if (!out.has(m.id)) out.set(m.id, m);
    }
    return [...out.values()];
  }

  private poolOf(model: string | undefined): ModelPool {
    let pool = this.byModel.get(model);
    if (pool === undefined) {
      pool = { model, policy: this.createPolicy() };
      this.byModel.set(model, pool);
    }
    return pool;
  }

  get(id: number): Replica | undefined {
    return this.replicas[id];
  }

  /** Every replica ever added, removed ones included (ids index this list). */
  all(): readonly Replica[] {
    return this.replicas;
  }

  present(): Replica[] {
    return this.replicas.filter((r) => !r.removed);
  }

  /** Present replicas of `replica`'s model pool and role, itself included: those that could take its work. */
  peersOf(replica: Replica): Replica[] {
    return this.present().filter((r) => r.modelPool === replica.modelPool && r.role === replica.role);
  }

  /** Replicas the policy may route to now. */
  routable(): Replica[] {
    return this.replicas.filter((r) => r.view === 'active');
  }

  /** An answer that proves the replica works (any 2xx, or a client's 4xx). */
  succeeded(replica: Replica): void {
    replica.breaker.success();
    this.reconcile(replica);
  }

  /** A replica fault: 5xx, reset, refused connection, timeout. */
  failed(replica: Replica): void {
    replica.breaker.failure(this.now());
    this.reconcile(replica);
  }

  healthChecked(replica: Replica, ok: boolean): void {
    if (ok) {
      replica.healthFailures = 0;
      replica.healthy = true;
    } else if (++replica.healthFailures >= this.options.unhealthyAfter) replica.healthy = false;
    this.reconcile(replica);
  }

  drain(replica: Replica, draining: boolean): void {
    replica.draining = draining;
    this.reconcile(replica);
  }

  /** Remove for good; its pool closes once its in-flight requests are done. */
  async remove(replica: Replica): Promise<void> {
    replica.removed = true;
    this.reconcile(replica);
    this.options.onRemoved?.(replica);
    await Promise.all([replica.pool.close(), replica.control.close()]);
  }

  /** Re-evaluate every replica (an open breaker half-opens with time alone). */
  reconcileAll(): void {
    for (const r of this.replicas) this.reconcile(r);
  }

  async close(): Promise<void> {
    const pools = this.replicas.flatMap((r) => [r.pool, r.control]);
    await Promise.all(pools.map((p) => (p.destroyed ? undefined : p.destroy())));
  }

  private reconcile(replica: Replica): void {
    const now = this.now();
    const pool = replica.modelPool;
    const wanted: ViewState =
      pool === undefined || replica.removed || !replica.healthy || replica.breaker.state(now) === 'open'
        ? 'gone'
        : replica.draining
          ? 'draining'
          : 'active';
    const from = replica.view;
    const moved = from !== 'gone' && replica.viewPool !== pool;
    if (wanted === from && !moved) return;
    // Leaving the view, or moving to another model's pool: the old pool's policy forgets it (its
    // in-flight requests stay counted there until they end: each attempt reports to its own policy).
    if (from !== 'gone' && (wanted === 'gone' || moved))
      replica.viewPool?.policy.instanceRemoved(replica.id, now);
    if (wanted !== 'gone' && pool !== undefined) {
      // Coming back from 'gone' is a fresh engine; from 'draining' it resumes with its cache.
      pool.policy.instanceAdded(
        replica.id,
        {
          kvCapacityTokens: replica.kvTokens,
          exclusivePrefixes: replica.dialect.exclusivePrefixes,
          ...(replica.costModel === undefined ? {} : { costModel: replica.costModel }),
          // As the simulator registers them: mixed is the absent role.
          ...(replica.role === 'mixed' ? {} : { role: replica.role }),
        },
        now,
      );
      if (wanted === 'draining') pool.policy.instanceDrained(replica.id, now);
    }
    replica.view = wanted;
    replica.viewPool = wanted === 'gone' ? undefined : pool;
    if (wanted !== from) this.options.onChange?.(replica, from);
  }
}
