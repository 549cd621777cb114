import type { InstanceId, InstanceInfo, InstanceLoadSignal, Role } from './types.ts';

/** Raised by `route` when no instance can take a request (none added, or all draining). */
export class NoInstanceAvailableError extends Error {
  constructor() {
    super('no instance is available to take the request');
    this.name = 'NoInstanceAvailableError';
  }
}

export interface InstanceState {
  readonly id: InstanceId;
  info: InstanceInfo;
  draining: boolean;
  /** Removed or failed: takes nothing, but its in-flight requests stay counted until they end. */
  removed: boolean;
  /** Requests routed here and not yet finished or failed. */
  inflight: number;
  /** Last polled load signal and when it came (undefined before the first poll). */
  signal: InstanceLoadSignal | undefined;
  signalAt: number;
}

/**
 * What every policy knows of the cluster: which instances exist and take work, and which requests
 * are in flight where. The router counts a request against its instance before dispatch and
 * releases it exactly once, on finish or on failure.
 */
export class ClusterView {
  private readonly states: (InstanceState | undefined)[] = [];
  private activeIds: InstanceId[] = [];
  /** In-flight request id -> its instance. */
  private readonly requests = new Map<string, InstanceId>();

  add(id: InstanceId, info: InstanceInfo): void {
    if (!Number.isInteger(id) || id < 0) throw new Error(`instance ids are non-negative integers, got ${id}`);
    const existing = this.states[id];
    if (existing !== undefined) {
      existing.info = info;
      existing.draining = false;
      existing.removed = false;
    } else {
      this.states[id] = {
        id,
        info,
        draining: false,
        removed: false,
        inflight: 0,
        signal: undefined,
        signalAt: 0,
      };
    }
    this.refreshActive();
  }

  /** A present instance's role changed (a fleet action): it stays active or draining as it was. */
  setRole(id: InstanceId, role: Role): void {
    const s = this.state(id);
    if (s !== undefined) s.info = { ...s.info, role };
  }

  drain(id: InstanceId): void {
    const s = this.states[id];
    if (s === undefined) return;
    s.draining = true;
    this.refreshActive();
  }

  /**
   * The instance left. Its state stays as a tombstone so that its in-flight requests remain counted
   * until they finish or fail, also if the same id comes back meanwhile.
   */
  remove(id: InstanceId): void {
    const s = this.states[id];
    if (s === undefined) return;
    s.removed = true;
    s.signal = undefined;
    this.refreshActive();
  }

  /**
   * Run `fn` with `ids` closed to new requests exactly as draining ones are (every policy already
   * honours draining), then reopen the ones this call closed.
   */
  withAvoided<T>(ids: readonly InstanceId[], fn: () => T): T {
    const closed: InstanceState[] = [];
    for (const id of ids) {
      const s = this.state(id);
      if (s !== undefined && !s.draining) {
        s.draining = true;
        closed.push(s);
      }
    }
    if (closed.length === 0) return fn();
    this.refreshActive();
    try {
      return fn();
    } finally {
      for (const s of closed) s.draining = false;
      this.refreshActive();
    }
  }

  has(id: InstanceId): boolean {
    return this.states[id]?.removed === false;
  }

  /** State of a present (not removed) instance. */
  state(id: InstanceId): InstanceState | undefined {
    const s = this.states[id];
    return s === undefined || s.removed ? undefined : s;
  }

  /** Instances that take new requests, in ascending id order. */
  get active(): readonly InstanceId[] {
    return this.activeIds;
  }

  /** All present instances, draining ones included. */
  *known(): Generator<InstanceState> {
    for (const s of this.states) if (s !== undefined && !s.removed) yield s;
  }

  /**
   * The instance in `active` with the fewest in-flight requests. The scan starts at index `start`
   * and wraps, so among equals the first one from `start` wins: start 0 gives the lowest id, a start
   * that moves after each choice rotates ties instead of piling them on one instance.
   */
  leastInflight(active: readonly InstanceId[], start = 0): InstanceId {
    const n = active.length;
    let best = active[start]!;
    let bestLoad = this.inflight(best);
    for (let k = 1; k < n && bestLoad > 0; k++) {
      const id = active[(start + k) % n]!;
      const load = this.inflight(id);
      if (load < bestLoad) {
        best = id;
        bestLoad = load;
      }
    }
    return best;
  }

  inflight(id: InstanceId): number {
    return this.states[id]?.inflight ?? 0;
  }

  get inflightTotal(): number {
    return this.requests.size;
  }

  /** Count a request against its instance (before dispatch). */
  begin(requestId: string, instance: InstanceId): void {
    if (this.requests.has(requestId)) throw new Error(`request ${requestId} is already in flight`);
    this.requests.set(requestId, instance);
    const s = this.states[instance];
    if (s !== undefined) s.inflight++;
  }

  /**
   * Move an in-flight request to another instance (disaggregation: from its prefill instance to its
   * decode instance); returns where it was, or undefined (nothing changes) if it is not in flight.
   */
  move(requestId: string, to: InstanceId): InstanceId | undefined {
    const from = this.requests.get(requestId);
    if (from === undefined) return undefined;
    this.requests.set(requestId, to);
    const a = this.states[from];
    if (a !== undefined) a.inflight--;
    const b = this.states[to];
    if (b !== undefined) b.inflight++;
    return from;
  }

  /** Release a request; returns where it ran, or undefined if it was not in flight (idempotent). */
  end(requestId: string): InstanceId | undefined {
    const instance = this.requests.get(requestId);
    if (instance === undefined) return undefined;
    this.requests.delete(requestId);
    const s = this.states[instance];
    if (s !== undefined) s.inflight--;
    return instance;
  }

  instanceOf(requestId: string): InstanceId | undefined {
    return this.requests.get(requestId);
  }

  setSignal(id: InstanceId, signal: InstanceLoadSignal, now: number): void {
    const s = this.state(id);
    if (s === undefined) return;
    s.signal = signal;
    s.signalAt = now;
  }

  private refreshActive(): void {
    const ids: InstanceId[] = [];
    for (const s of this.states) if (s !== undefined && !s.draining && !s.removed) ids.push(s.id);
    this.activeIds = ids;
  }
}
