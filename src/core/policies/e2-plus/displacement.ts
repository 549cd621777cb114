import type { InstanceId } from '../../types.ts';
import { SlidingWindow } from '../../window.ts';

/** Tokens that left a cache, or that a request found in the tree but cached nowhere, at one time. */
interface CacheEvent {
  readonly time: number;
  readonly evicted: number;
  readonly reRequested: number;
}

/**
 * How often evicted KV is wanted again (e2-plus's `displacement`, docs/e2.md step 35). Over the
 * window H it sums the tokens instances evicted and the tokens requests then found in the global tree
 * (seen inside the window) but cached on no instance: computed before, evicted, and needed again.
 * Their ratio is the chance that an evicted token is requested again. A miss on an instance whose
 * cache churns evicts as many tokens there as it computes, so it costs that share of its prefill once
 * more, later, to whoever needs the victims. Where nothing evicted is wanted again (prompts that never
 * repeat) or nothing is evicted (the working set fits), the share is 0 and so is the cost.
 */
export class DisplacementMeter {
  private readonly events: SlidingWindow<CacheEvent>;
  private evicted = 0;
  private reRequested = 0;
  /** When each instance last evicted (its cache churns while that is inside the window). */
  private readonly lastEviction: number[] = [];

  constructor(private readonly horizon: number) {
    this.events = new SlidingWindow(horizon);
  }

  /**
   * `instance` evicted `tokens` (reported by its engine, or predicted by the global LRU model). A
   * report stamped before the newest event counts at the newest's time (events keep time order).
   */
  recordEviction(instance: InstanceId, tokens: number, now: number): void {
    if (!(tokens > 0)) return;
    this.push({ time: this.events.timeFrom(now), evicted: tokens, reRequested: 0 });
    this.lastEviction[instance] = now;
  }

  /** A request found `tokens` of its prompt in the tree (seen before) but cached on no instance. */
  recordReRequest(tokens: number, now: number): void {
    if (!(tokens > 0)) return;
    this.push({ time: this.events.timeFrom(now), evicted: 0, reRequested: tokens });
  }

  /** The window's share of evicted tokens requested again, at most 1; 0 while nothing was evicted. */
  share(now: number): number {
    this.events.expire(now, (e) => {
      this.evicted -= e.evicted;
      this.reRequested -= e.reRequested;
    });
    if (this.events.size === 0) {
      // Float residue must not outlive the events it summed.
      this.evicted = 0;
      this.reRequested = 0;
    }
    return this.evicted > 0 ? Math.min(1, this.reRequested / this.evicted) : 0;
  }

  /** Whether `instance` evicted within the window: a miss there displaces cached tokens. */
  churns(instance: InstanceId, now: number): boolean {
    const last = this.lastEviction[instance];
    return last !== undefined && last > now - this.horizon;
  }

  /** An instance left: its evictions no longer say anything about its cache. */
  forget(instance: InstanceId): void {
    delete this.lastEviction[instance];
  }

  private push(e: CacheEvent): void {
    this.events.push(e);
    this.evicted += e.evicted;
    this.reRequested += e.reRequested;
  }
}
