/** A token bucket: `ratePerSecond` sustained, `burst` at once. Times are seconds on the caller's clock. */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    private readonly ratePerSecond: number,
    private readonly burst: number,
    now: number,
  ) {
    this.tokens = burst;
    this.last = now;
  }

  /** Take one token: 0 when granted, else the seconds until one will be there. */
  take(now: number): number {
    this.tokens = Math.min(this.burst, this.tokens + (now - this.last) * this.ratePerSecond);
    this.last = Math.max(this.last, now);
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return (1 - this.tokens) / this.ratePerSecond;
  }
}
