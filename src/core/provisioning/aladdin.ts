/**
 * Aladdin's scaling (seed 004, Aladdin §5): at each heartbeat, the workers for the arrival rate by
 * Eq. 7, N_w = ceil(k5·r_a + c5), with (k5, c5) learned online from (rate, workers the placement used)
 * pairs; below the rate R the heartbeat's arrivals are too few to stand for the traffic and the fleet
 * follows the placement's own count instead. Adds what is missing, removes the emptiest workers past
 * the count (idle first: a removal drains, so nothing in flight is lost).
 */
import { withDefaults } from '../with-defaults.ts';
import { fitWorkerLine, type WorkerLine, type WorkerSample, workersForRate } from './sizing.ts';
import type { FleetState, ProvisionAction, ProvisionedInstance, Provisioner } from './types.ts';

export interface AladdinProvisionerOptions {
  /** Seconds between sizing decisions (Aladdin's cluster heartbeat; the paper gives none: ours). */
  readonly heartbeatSeconds?: number;
  /** R: below this rate (requests/s) Eq. 7 is not used (ours; `lowRateGuard` computes one from lengths). */
  readonly minRate?: number;
  /** Eq. 7's slope and intercept, when known (from `preble experiment aladdin`); 0 and 0: learned online. */
  readonly k5?: number;
  readonly c5?: number;
  /** The role of the workers it sizes: `mixed` (colocated) or `decode` (split phase: Aladdin sizes decode). */
  readonly role?: 'mixed' | 'decode';
  readonly minWorkers?: number;
  readonly maxWorkers?: number;
  /** (rate, workers) pairs kept for the online fit. */
  readonly samples?: number;
}

export const aladdinProvisionerDefaults: Required<AladdinProvisionerOptions> = {
  heartbeatSeconds: 10,
  minRate: 1,
  k5: 0,
  c5: 0,
  role: 'mixed',
  minWorkers: 1,
  maxWorkers: 64,
  samples: 64,
};

export class AladdinProvisioner implements Provisioner {
  readonly name = 'aladdin';
  private readonly o: Required<AladdinProvisionerOptions>;
  private readonly history: WorkerSample[] = [];
  private arrivals = 0;
  private elapsed = 0;

  constructor(options: AladdinProvisionerOptions = {}) {
    this.o = withDefaults(aladdinProvisionerDefaults, options);
    if (!(this.o.heartbeatSeconds > 0)) throw new Error('aladdin provisioner: heartbeatSeconds must be > 0');
    if (this.o.role !== 'mixed' && this.o.role !== 'decode')
      throw new Error(`aladdin provisioner: role must be mixed or decode, got ${String(this.o.role)}`);
    if (!(this.o.minWorkers >= 1 && this.o.maxWorkers >= this.o.minWorkers))
      throw new Error('aladdin provisioner: need 1 <= minWorkers <= maxWorkers');
  }

  /** The line Eq. 7 sizes with now: the given one, else the fit over the heartbeats so far. */
  line(): WorkerLine | undefined {
    if (this.o.k5 > 0) return { k5: this.o.k5, c5: this.o.c5 };
    return fitWorkerLine(this.history);
  }

  /** The worker count it aims at for this heartbeat. */
  target(rate: number, used: number): number {
    const line = rate > this.o.minRate ? this.line() : undefined;
    const wanted = line === undefined ? used : workersForRate(line, rate);
    return Math.min(this.o.maxWorkers, Math.max(this.o.minWorkers, wanted));
  }

  tick(_now: number, fleet: FleetState): readonly ProvisionAction[] {
    this.arrivals += fleet.arrivals;
    this.elapsed += fleet.elapsed;
    if (this.elapsed < this.o.heartbeatSeconds) return [];
    const rate = this.arrivals / this.elapsed;
    this.arrivals = 0;
    this.elapsed = 0;
    const mine = fleet.instances.filter((i) => i.role === this.o.role);
    const serving = mine.filter((i) => i.state !== 'draining');
    // Workers the placement uses: those with work, or the policy's own count when it gives one.
    const used = fleet.wanted ?? mine.filter((i) => i.inflight > 0).length;
    if (rate > this.o.minRate) {
      this.history.push({ rate, workers: used });
      if (this.history.length > this.o.samples) this.history.shift();
    }
    const target = this.target(rate, used);
    if (target > serving.length)
      return Array.from({ length: target - serving.length }, () => ({ action: 'add', role: this.o.role }));
    // Never the last active worker: the ones starting take nothing yet.
    const ready = serving.filter((i) => i.state === 'active');
    return emptiest(ready, Math.min(serving.length - target, ready.length - 1)).map((i) => ({
      action: 'remove' as const,
      instance: i.id,
    }));
  }
}

/** Up to `n` of `instances`, the fewest in flight first (ties: the newest id, the last one added). */
function emptiest(instances: readonly ProvisionedInstance[], n: number): ProvisionedInstance[] {
  if (n <= 0) return [];
  return [...instances].sort((a, b) => a.inflight - b.inflight || b.id - a.id).slice(0, n);
}
