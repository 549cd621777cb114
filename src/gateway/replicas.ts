import { Pool } from 'undici';
import type { GlobalPolicy } from '../core/types.ts';
import { type BreakerOptions, CircuitBreaker } from './breaker.ts';
import type { DialectName } from './config.ts';
import { type Dialect, dialectOf } from './dialects.ts';

/** Where a replica stands in the policy's view. */
type ViewState = 'active' | 'draining' | 'gone';

/** One upstream replica: address, dialect, connection pool and health. */
export interface Replica {
  readonly id: number;
  readonly url: string;
  readonly dialect: Dialect;
  readonly kvTokens: number;
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
}

export interface ReplicaSetOptions {
  readonly breaker: BreakerOptions;
  readonly connectTimeoutSeconds: number;
  /** Consecutive failed health checks that take a replica out. */
  readonly unhealthyAfter: number;
  /** Called whenever a replica's view state changes (metrics, logs). */
  readonly onChange?: (replica: Replica, from: ViewState) => void;
}

export interface NewReplica {
  readonly url: string;
  readonly dialect: DialectName;
  readonly kvTokens: number;
}

/**
 * The replicas the gateway forwards to, by instance id, and the one place that keeps the policy's
 * view in step with their health: a replica is in the view while it is healthy, its breaker is not
 * open and it was not removed; leaving the view forgets its cached prefixes (it may come back as a
 * fresh engine), and it is re-admitted once healthy again.
 */
export class ReplicaSet {
  private readonly replicas: Replica[] = [];

  constructor(
    private readonly policy: GlobalPolicy,
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
      kvTokens: spec.kvTokens,
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
    };
    this.replicas.push(replica);
    this.reconcile(replica);
    return replica;
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
    const wanted: ViewState =
      replica.removed || !replica.healthy || replica.breaker.state(now) === 'open'
        ? 'gone'
        : replica.draining
          ? 'draining'
          : 'active';
    const from = replica.view;
    if (wanted === from) return;
    replica.view = wanted;
    if (wanted === 'gone') this.policy.instanceRemoved(replica.id, now);
    else {
      // Coming back from 'gone' is a fresh engine; from 'draining' it resumes with its cache.
      this.policy.instanceAdded(
        replica.id,
        { kvCapacityTokens: replica.kvTokens, exclusivePrefixes: replica.dialect.exclusivePrefixes },
        now,
      );
      if (wanted === 'draining') this.policy.instanceDrained(replica.id, now);
    }
    this.options.onChange?.(replica, from);
  }
}
