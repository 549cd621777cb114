import type { FleetRequest, InstanceId } from '../../../types.ts';

/** A prefill or decode instance as the transition watcher sees it. */
export interface WatchedInstance {
  readonly instance: InstanceId;
  readonly role: 'prefill' | 'decode';
  /** Requests counted against it (prefills queued or running; decodes bound there or running). */
  readonly inflight: number;
}

/**
 * TetriInfer's instance flip (§3.5, Figure 10): a transition watcher picks an instance, the schedulers
 * stop sending it work, it drains, and the flip itself takes 5-7 ms (no restart, no model reload).
 * The paper leaves the policy pluggable ("flipping an instance if its load has been under 10% for the
 * past minute"); ours: an instance with nothing in flight for `idleSeconds` flips to the other role
 * while every instance of that role is busy, never the last of its own role, one flip at a time. The
 * watcher runs whenever the policy is asked for fleet requests (after every simulator event), so the
 * flip lands at the first event at least `delaySeconds` after the drain.
 */
export class FlipWatcher {
  private readonly idleSince = new Map<InstanceId, number>();
  /** Instances being flipped: the role they go to, and when the flip ends (once drained). */
  private readonly flipping = new Map<InstanceId, { to: 'prefill' | 'decode'; at?: number }>();

  constructor(
    private readonly idleSeconds: number,
    private readonly delaySeconds: number,
  ) {}

  /** Whether the instance is draining or flipping (no new work goes to it). */
  isFlipping(instance: InstanceId): boolean {
    return this.flipping.has(instance);
  }

  /** Forget an instance that left the fleet. */
  forget(instance: InstanceId): void {
    this.idleSince.delete(instance);
    this.flipping.delete(instance);
  }

  /** Advance the watcher to `now`; returns the role changes due now. */
  observe(now: number, instances: readonly WatchedInstance[]): FleetRequest[] {
    if (this.idleSeconds <= 0) return [];
    const out: FleetRequest[] = [];
    for (const w of instances) {
      const flip = this.flipping.get(w.instance);
      if (flip !== undefined) {
        if (flip.at === undefined && w.inflight === 0) flip.at = now + this.delaySeconds;
        if (flip.at !== undefined && now >= flip.at) {
          out.push({ action: 'role', instance: w.instance, role: flip.to });
          this.flipping.delete(w.instance);
          this.idleSince.delete(w.instance);
        }
        continue;
      }
      if (w.inflight > 0) this.idleSince.delete(w.instance);
      else if (!this.idleSince.has(w.instance)) this.idleSince.set(w.instance, now);
    }
    if (this.flipping.size > 0) return out;
    for (const w of instances) {
      const since = this.idleSince.get(w.instance);
      if (since === undefined || now - since < this.idleSeconds) continue;
      const other = w.role === 'prefill' ? 'decode' : 'prefill';
      const others = instances.filter((x) => x.role === other && !this.flipping.has(x.instance));
      const own = instances.filter((x) => x.role === w.role && !this.flipping.has(x.instance));
      if (others.length === 0 || own.length < 2 || others.some((x) => x.inflight === 0)) continue;
      // Idle already: drained at once, so the flip ends after its delay.
      this.flipping.set(w.instance, { to: other, at: now + this.delaySeconds });
      this.idleSince.delete(w.instance);
      break;
    }
    return out;
  }
}
