import { type KvLink, transferSeconds } from '../core/fleet/kv-link.ts';
import type { GlobalPolicy, InstanceId, MigrationRequest } from '../core/types.ts';
import type { Engine } from '../engine/engine.ts';
import type { EngineEviction, EngineRequest } from '../engine/types.ts';

/** How live migrations run (SimulatorOptions.migration). */
export interface MigrationSetup {
  /**
   * The link between two instances of a colocated fleet (a fleet with `kvTransfer` uses its placement).
   * Default: 200 Gbps InfiniBand (`infiniband-200`), instances on separate nodes.
   */
  readonly link?: KvLink;
  /** Copy rounds while decoding continues, at most, before the stop-and-copy. Default 8. */
  readonly maxRounds?: number;
  /** Stop and copy once a round leaves at most this many new tokens to copy. Default 8. */
  readonly stopCopyTokens?: number;
}

export const migrationDefaults = { maxRounds: 8, stopCopyTokens: 8 } as const;

/** One step of a migration, in order (`SimResult.migrationLog`). */
export interface MigrationLogEntry {
  readonly at: number;
  readonly id: string;
  readonly from: InstanceId;
  readonly to: InstanceId;
  /**
   * `round`: a copy round started (`tokens` to copy, the request decoding on); `stop-and-copy`: the
   * request left the source's batch for the last copy; `done`: it is on `to`; `aborted`: it stays on
   * `from` (`reason`). A queued move logs `done` or `aborted` alone, with `queued`.
   */
  readonly event: 'round' | 'stop-and-copy' | 'done' | 'aborted';
  readonly tokens?: number;
  readonly reason?: string;
  readonly queued?: true;
}

/** What the migrator needs of the simulator. */
export interface MigrationHost {
  readonly engines: readonly Engine[];
  readonly policy: GlobalPolicy;
  /** The request as its engine got it (prompt, output length), while it is in flight. */
  request(id: string): EngineRequest | undefined;
  /** Whether `to` may receive a migrated request now (present, active, decoding). */
  canReceive(to: InstanceId): boolean;
  /** The link from one instance to another (never the same one). */
  link(from: InstanceId, to: InstanceId): KvLink;
  kvBytesPerToken(from: InstanceId): number;
  /** Run `step` at `time` on the simulator's clock (an event). */
  at(time: number, step: () => void): void;
  /** The engine of `instance` may have work now (after an adoption or a suspension). */
  kick(instance: InstanceId): void;
  /** Evictions made on `instance` to reserve memory, reported to the policy now. */
  evicted(instance: InstanceId, evictions: readonly EngineEviction[], now: number): void;
  /** A queued move is done: the request waits on `to` now (its record's instance). */
  requeued(id: string, to: InstanceId): void;
}

interface Migration extends MigrationRequest {
  readonly request: EngineRequest;
  /** Tokens of KV on the destination, and those whose copy is under way. */
  sent: number;
  inFlight: number;
  /** Memory reserved on the destination (`reserveIncoming`), released at the end. */
  reserved: number;
  rounds: number;
  stopping: boolean;
}

/** A migration before its first copy (or one refused at once). */
const fresh = (m: MigrationRequest, request: EngineRequest): Migration => ({
  ...m,
  request,
  sent: 0,
  inFlight: 0,
  reserved: 0,
  rounds: 0,
  stopping: false,
});

/**
 * Llumnix's live migration (OSDI 24, §4.2) on the simulator's clock: a policy's request starts a copy
 * of the request's KV over the link between the two instances (kv-link.ts: latency + bytes /
 * bandwidth) while it keeps decoding on the source; each round then copies the tokens the previous one
 * left behind, after reserving room for them on the destination (none: abort), until a round leaves at
 * most `stopCopyTokens` or `maxRounds` were run; then the stop-and-copy: the request leaves the source's
 * batch, its last tokens are copied, the source frees its KV and the destination adopts it, ahead of
 * its adopt queue. A request that finishes or is preempted on the source, or a destination that stops
 * taking work, aborts the migration (a suspended request resumes on the source); the destination's
 * reservation goes back.
 *
 * A queued move (`MigrationRequest.queued`, Aladdin's re-balancing) is the same request with no KV to
 * copy: done or refused at once (`requeue`).
 *
 * Approximation: an engine's state runs one iteration ahead of the clock (its tokens are computed when
 * the iteration starts), so a round started mid-iteration copies that iteration's token too.
 */
export class Migrator {
  readonly log: MigrationLogEntry[] = [];
  private readonly active = new Map<string, Migration>();
  private readonly maxRounds: number;
  private readonly stopCopyTokens: number;

  constructor(
    private readonly host: MigrationHost,
    setup: MigrationSetup = {},
  ) {
    this.maxRounds = setup.maxRounds ?? migrationDefaults.maxRounds;
    this.stopCopyTokens = setup.stopCopyTokens ?? migrationDefaults.stopCopyTokens;
    if (!Number.isInteger(this.maxRounds) || this.maxRounds < 1)
      throw new Error(`migration: maxRounds must be an integer >= 1, got ${this.maxRounds}`);
    if (!(this.stopCopyTokens >= 0))
      throw new Error(`migration: stopCopyTokens must be >= 0, got ${this.stopCopyTokens}`);
  }

  /** Migrations under way. */
  get inProgress(): number {
    return this.active.size;
  }

  /** The policy's migration requests, started at `now`. */
  take(now: number): void {
    const asked = this.host.policy.migrations?.(now);
    if (asked !== undefined) for (const m of asked) this.start(m, now);
  }

  private start(m: MigrationRequest, now: number): void {
    if (m.queued === true) {
      this.requeue(m, now);
      return;
    }
    const request = this.host.request(m.id);
    const info = this.host.engines[m.from]?.request(m.id);
    let refused: string | undefined;
    if (this.active.has(m.id)) refused = 'already migrating';
    else if (m.from === m.to) refused = 'source and destination are one instance';
    else if (request === undefined || info === undefined || info.phase !== 'decode')
      refused = `not decoding on instance ${m.from}`;
    else if (!this.host.canReceive(m.to)) refused = `instance ${m.to} cannot take it`;
    if (refused !== undefined) {
      this.end(fresh(m, request!), now, refused);
      return;
    }
    const migration = fresh(m, request!);
    this.active.set(m.id, migration);
    this.copy(migration, info!.kvTokens, now);
  }

  /**
   * A queued move (Aladdin's re-balancing): a request waiting on `from`, never admitted, has no KV, so
   * it leaves that queue and joins the tail of `to`'s at once; the re-queue is all it costs. The
   * destination takes it first (it may refuse a request too large for it), then the source lets go
   * (it refuses one that started); a refusal there takes it back off the destination.
   */
  private requeue(m: MigrationRequest, now: number): void {
    const request = this.host.request(m.id);
    const from = this.host.engines[m.from];
    const to = this.host.engines[m.to];
    let refused: string | undefined;
    if (this.active.has(m.id)) refused = 'already migrating';
    else if (m.from === m.to) refused = 'source and destination are one instance';
    else if (request === undefined || from?.request(m.id)?.phase !== 'waiting')
      refused = `not waiting on instance ${m.from}`;
    else if (to === undefined || to.role !== 'mixed' || !this.host.canReceive(m.to))
      refused = `instance ${m.to} cannot take it`;
    else {
      try {
        to.submit(request, now);
      } catch (e) {
        refused = (e as Error).message;
      }
      if (refused === undefined && !from.withdraw(m.id)) {
        to.abort(m.id);
        refused = `started on instance ${m.from}`;
      }
    }
    if (refused === undefined) this.host.requeued(m.id, m.to);
    this.end(fresh(m, request!), now, refused);
  }

  /** Reserve room for `tokens` more on the destination and copy them; abort when there is none. */
  private copy(m: Migration, tokens: number, now: number): boolean {
    const to = this.host.engines[m.to]!;
    const evictions = to.reserveIncoming(tokens);
    if (evictions === undefined) {
      this.end(m, now, `no memory on instance ${m.to}`);
      return false;
    }
    if (evictions.length > 0) this.host.evicted(m.to, evictions, now);
    m.reserved += tokens;
    m.inFlight = tokens;
    m.rounds++;
    this.log.push({
      at: now,
      id: m.id,
      from: m.from,
      to: m.to,
      event: m.stopping ? 'stop-and-copy' : 'round',
      tokens,
    });
    const seconds = transferSeconds(this.host.link(m.from, m.to), tokens, this.host.kvBytesPerToken(m.from));
    this.host.at(now + seconds, () => this.roundEnded(m, this.host.engines[m.from]!, now + seconds));
    return true;
  }

  private roundEnded(m: Migration, source: Engine, now: number): void {
    m.sent += m.inFlight;
    m.inFlight = 0;
    if (m.stopping) {
      if (!this.host.canReceive(m.to)) {
        // The destination stopped taking work during the last copy: the request decodes on where it was.
        source.resume(m.id);
        this.end(m, now, `instance ${m.to} cannot take it`);
        return;
      }
      const kv = source.migrateOut(m.id);
      if (kv.kvTokens !== m.sent)
        throw new Error(
          `migration of '${m.id}': copied ${m.sent} KV tokens of ${kv.kvTokens} (internal error)`,
        );
      const to = this.host.engines[m.to]!;
      to.releaseIncoming(m.reserved);
      m.reserved = 0;
      to.adoptMigrated(m.request, kv, now);
      this.end(m, now);
      return;
    }
    const info = source.request(m.id);
    if (info === undefined || info.phase !== 'decode') {
      this.end(m, now, info === undefined ? 'finished on the source' : `${info.phase} on the source`);
      return;
    }
    if (!this.host.canReceive(m.to)) {
      this.end(m, now, `instance ${m.to} cannot take it`);
      return;
    }
    const left = info.kvTokens - m.sent;
    if (left < 0) {
      this.end(m, now, 'its KV shrank on the source');
      return;
    }
    if (left <= this.stopCopyTokens || m.rounds >= this.maxRounds) {
      m.stopping = true;
      // Room first: without it the request simply keeps decoding on the source.
      if (!this.copy(m, left, now)) return;
      source.suspend(m.id);
      this.host.kick(m.from);
    } else this.copy(m, left, now);
  }

  /** The migration ends: done (no reason) or aborted; the destination's reservation goes back. */
  private end(m: Migration, now: number, reason?: string): void {
    if (m.reserved > 0) this.host.engines[m.to]!.releaseIncoming(m.reserved);
    m.reserved = 0;
    if (this.active.get(m.id) === m) this.active.delete(m.id);
    const outcome = reason === undefined ? 'done' : 'aborted';
    this.log.push({
      at: now,
      id: m.id,
      from: m.from,
      to: m.to,
      event: outcome,
      ...(reason === undefined ? {} : { reason }),
      ...(m.queued === true ? { queued: true as const } : {}),
    });
    this.host.policy.migrationEnded?.(m.id, m.from, m.to, outcome, now);
    // Memory given back may let waiting work run (an engine stalls while nothing fits).
    this.host.kick(m.to);
    this.host.kick(m.from);
  }
}
