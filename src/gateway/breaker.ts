/** Settings of a per-replica circuit breaker. */
export interface BreakerOptions {
  /** Consecutive failures (5xx, resets, timeouts) that open the breaker. */
  readonly failureThreshold: number;
  /** Seconds an open breaker waits before it half-opens to let traffic probe the replica. */
  readonly openSeconds: number;
}

export type BreakerState = 'closed' | 'open' | 'half-open';

/**
 * Closed: traffic flows, consecutive failures are counted. Open: the replica gets nothing until
 * `openSeconds` pass. Half-open: traffic flows again and the first outcome decides (a success
 * closes, a failure opens again). Only replica faults count; a client's 4xx is the client's fault
 * and is never reported here. Times are seconds on the caller's clock.
 */
export class CircuitBreaker {
  private current: BreakerState = 'closed';
  private failures = 0;
  private openedAt = 0;
  /** Times the breaker opened, for metrics. */
  opened = 0;

  constructor(private readonly options: BreakerOptions) {}

  /** The state at `now` (an open breaker half-opens by itself once its time is up). */
  state(now: number): BreakerState {
    if (this.current === 'open' && now - this.openedAt >= this.options.openSeconds)
      this.current = 'half-open';
    return this.current;
  }

  success(): void {
    this.failures = 0;
    this.current = 'closed';
  }

  /** Count a replica fault; true when this one opened the breaker. */
  failure(now: number): boolean {
    const state = this.state(now);
    if (state === 'open') return false;
    this.failures++;
    if (state === 'half-open' || this.failures >= this.options.failureThreshold) {
      this.current = 'open';
      this.openedAt = now;
      this.opened++;
      return true;
    }
    return false;
  }

  get consecutiveFailures(): number {
    return this.failures;
  }
}
