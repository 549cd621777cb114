import type {
  InstanceId,
  InstanceInfo,
  InstanceLoadSignal,
  MigrationOutcome,
  MigrationRequest,
  RouteDecision,
  RouteRequest,
} from '../../types.ts';
import { withDefaults } from '../../with-defaults.ts';
import { BasePolicy } from '../base-policy.ts';
import { PerInstanceNumbers } from '../support/per-instance-numbers.ts';
import { llumnixFreeness } from './freeness.ts';

export interface LlumnixOptions {
  /** An instance whose freeness (tokens of KV left per running request) is below this migrates requests out. Default 32. */
  readonly migrateOutFreeness?: number;
  /** An instance whose freeness is above this takes migrated requests. Default 128. */
  readonly migrateInFreeness?: number;
  /** Migrations started per tick at most (one per source-destination pair). Default 2. */
  readonly maxMigrationsPerTick?: number;
  /** Comma list of tenants whose requests are high priority ('' for none). Default ''. */
  readonly highPriorityTenants?: string;
  /** KV tokens each high-priority request adds to its instance's virtual usage. Default 2048. */
  readonly priorityHeadroomTokens?: number;
}

export const llumnixDefaults: Required<LlumnixOptions> = {
  migrateOutFreeness: 32,
  migrateInFreeness: 128,
  maxMigrationsPerTick: 2,
  highPriorityTenants: '',
  priorityHeadroomTokens: 2048,
};

/** A request the policy placed, while in flight. */
interface Tracked {
  instance: InstanceId;
  readonly promptTokens: number;
  readonly high: boolean;
  /** Its first token came: it decodes, so it can migrate. */
  decoding: boolean;
  migrating: boolean;
}

/**
 * Llumnix (OSDI 24) as a load balancer: dispatch to the active instance with the highest freeness
 * (freeness.ts), and at each tick pair the instances below `migrateOutFreeness` (the least free first;
 * draining ones always) with those above `migrateInFreeness` (the most free first) and migrate one
 * decoding request of each source: normal priority before high, then the shortest prompt (Llumnix
 * prefers short sequences: the least to copy). The migrations are live (the simulator's rounds and
 * stop-and-copy, src/sim/migration.ts). Load balancing, de-fragmentation (the head-of-line demand in
 * the virtual usage) and priorities (a headroom per high-priority request) all go through freeness, as
 * in the paper. The thresholds are ours (the paper gives none we could carry over).
 */
export class LlumnixPolicy extends BasePolicy {
  readonly name = 'llumnix';
  readonly branches = ['freeness'] as const;
  private readonly o: Required<LlumnixOptions>;
  private readonly highTenants: ReadonlySet<string>;
  private readonly tracked = new Map<string, Tracked>();
  private readonly sentRequests = new PerInstanceNumbers();
  private readonly sentTokens = new PerInstanceNumbers();
  private readonly headroom = new PerInstanceNumbers();
  /** Migrations under way, per source (one at a time). */
  private readonly migratingFrom = new PerInstanceNumbers();
  private asked: MigrationRequest[] = [];

  constructor(options: LlumnixOptions = {}) {
    super();
    this.o = withDefaults(llumnixDefaults, options);
    if (!(this.o.migrateInFreeness > this.o.migrateOutFreeness))
      throw new Error(
        `llumnix: migrateInFreeness (${this.o.migrateInFreeness}) must be above migrateOutFreeness (${this.o.migrateOutFreeness})`,
      );
    if (!Number.isInteger(this.o.maxMigrationsPerTick) || this.o.maxMigrationsPerTick < 0)
      throw new Error(
        `llumnix: maxMigrationsPerTick must be an integer >= 0, got ${this.o.maxMigrationsPerTick}`,
      );
    if (!(this.o.priorityHeadroomTokens >= 0))
      throw new Error(`llumnix: priorityHeadroomTokens must be >= 0, got ${this.o.priorityHeadroomTokens}`);
    this.highTenants = new Set(
      this.o.highPriorityTenants
        .split(',')
        .map((t) => t.trim())
        .filter((t) => t.length > 0),
    );
  }

  /** The instance's freeness now (tests, explanations). */
  freeness(instance: InstanceId): number {
    const state = this.view.state(instance);
    if (state === undefined) return Number.NEGATIVE_INFINITY;
    return llumnixFreeness({
      capacityTokens: state.info.kvCapacityTokens,
      signal: state.signal,
      sentRequests: this.sentRequests.get(instance),
      sentTokens: this.sentTokens.get(instance),
      inflight: state.inflight,
      headroomTokens: this.headroom.get(instance),
      draining: state.draining,
    });
  }

  protected choose(_request: RouteRequest, _now: number, active: readonly InstanceId[]): RouteDecision {
    let best = active[0]!;
    let bestF = this.freeness(best);
    const costs = [{ instance: best, total: -bestF }];
    for (let k = 1; k < active.length; k++) {
      const i = active[k]!;
      const f = this.freeness(i);
      costs.push({ instance: i, total: -f });
      if (f > bestF || (f === bestF && this.view.inflight(i) < this.view.inflight(best))) {
        best = i;
        bestF = f;
      }
    }
    return { instance: best, branch: 'freeness', matchedTokens: 0, costs };
  }

  protected override onRouted(request: RouteRequest, decision: RouteDecision): void {
    const high = request.tenant !== undefined && this.highTenants.has(request.tenant);
    const i = decision.instance;
    this.tracked.set(request.id, {
      instance: i,
      promptTokens: request.tokens.length,
      high,
      decoding: false,
      migrating: false,
    });
    this.sentRequests.add(i, 1);
    this.sentTokens.add(i, request.tokens.length);
    if (high) this.headroom.add(i, this.o.priorityHeadroomTokens);
  }

  override requestFirstToken(id: string, now: number): void {
    super.requestFirstToken(id, now);
    const t = this.tracked.get(id);
    if (t !== undefined) t.decoding = true;
  }

  protected override onReleased(id: string): void {
    const t = this.tracked.get(id);
    if (t === undefined) return;
    this.tracked.delete(id);
    if (t.high) this.headroom.add(t.instance, -this.o.priorityHeadroomTokens);
    // It ended before its migration did (that one will end aborted, finding nothing to clear).
    if (t.migrating) this.migratingFrom.add(t.instance, -1);
  }

  protected override onMoved(id: string, from: InstanceId, to: InstanceId): void {
    const t = this.tracked.get(id);
    if (t === undefined) return;
    t.instance = to;
    if (t.high) {
      this.headroom.add(from, -this.o.priorityHeadroomTokens);
      this.headroom.add(to, this.o.priorityHeadroomTokens);
    }
  }

  override instanceAdded(instance: InstanceId, info: InstanceInfo, now: number): void {
    super.instanceAdded(instance, info, now);
    this.sentRequests.set(instance, 0);
    this.sentTokens.set(instance, 0);
  }

  override loadSignal(instance: InstanceId, signal: InstanceLoadSignal, now: number): void {
    super.loadSignal(instance, signal, now);
    this.sentRequests.set(instance, 0);
    this.sentTokens.set(instance, 0);
  }

  /** Pair the least free sources with the most free destinations; one migration per pair. */
  override tick(now: number): void {
    super.tick(now);
    // Asks nobody took (a face that does not migrate: the gateway) are dropped, not piled up.
    for (const m of this.asked) this.settle(m.id, m.from);
    this.asked = [];
    const sources: { i: InstanceId; f: number }[] = [];
    const destinations: { i: InstanceId; f: number }[] = [];
    for (const s of this.view.known()) {
      const f = this.freeness(s.id);
      if (this.migratingFrom.get(s.id) > 0) continue;
      if (f < this.o.migrateOutFreeness) sources.push({ i: s.id, f });
      else if (!s.draining && f > this.o.migrateInFreeness && (s.info.role ?? 'mixed') !== 'prefill')
        destinations.push({ i: s.id, f });
    }
    sources.sort((a, b) => a.f - b.f || a.i - b.i);
    destinations.sort((a, b) => b.f - a.f || a.i - b.i);
    const pairs = Math.min(sources.length, destinations.length, this.o.maxMigrationsPerTick);
    for (let k = 0; k < pairs; k++) {
      const from = sources[k]!.i;
      const to = destinations[k]!.i;
      const id = this.candidate(from);
      if (id === undefined) continue;
      this.tracked.get(id)!.migrating = true;
      this.migratingFrom.add(from, 1);
      this.asked.push({ id, from, to });
    }
  }

  migrations(_now: number): readonly MigrationRequest[] {
    if (this.asked.length === 0) return [];
    const out = this.asked;
    this.asked = [];
    return out;
  }

  override migrationEnded(
    id: string,
    from: InstanceId,
    to: InstanceId,
    outcome: MigrationOutcome,
    now: number,
  ): void {
    super.migrationEnded(id, from, to, outcome, now);
    this.settle(id, from);
  }

  /** A migration of `id` off `from` is over (or was never taken). */
  private settle(id: string, from: InstanceId): void {
    const t = this.tracked.get(id);
    if (t?.migrating === true) {
      t.migrating = false;
      this.migratingFrom.add(from, -1);
    }
  }

  /** The request to move off `from`: decoding, normal priority first, then the shortest prompt. */
  private candidate(from: InstanceId): string | undefined {
    let best: string | undefined;
    let bestKey = Number.POSITIVE_INFINITY;
    for (const [id, t] of this.tracked) {
      if (t.instance !== from || !t.decoding || t.migrating) continue;
      const key = (t.high ? 1e12 : 0) + t.promptTokens;
      if (key < bestKey) {
        best = id;
        bestKey = key;
      }
    }
    return best;
  }
}
