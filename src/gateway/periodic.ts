/** A round of background work run every interval, never overlapping itself (a slow round skips a tick). */
export class Periodic {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly round: () => Promise<void>) {}

  /** Start ticking; 0 or less leaves it off (rounds then run only through `runNow`). */
  start(intervalSeconds: number): void {
    if (intervalSeconds <= 0) return;
    this.timer = setInterval(() => void this.runNow(), intervalSeconds * 1000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
  }

  /** Run a round now, or wait for the one under way. */
  runNow(): Promise<void> {
    this.running ??= this.round().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }
}

/** The shortest real interval a policy-clock period is run at: a fast time scale must not flood replicas. */
export const MIN_REAL_INTERVAL_SECONDS = 0.02;

/**
 * Real seconds between rounds of work that is periodic on the policy's clock (ticks, load polls): the
 * policy's clock runs `timeScale` times faster than the wall clock, so `seconds` of it pass in
 * `seconds / timeScale` real seconds (at least MIN_REAL_INTERVAL_SECONDS). 0 or less stays off.
 */
export function realInterval(seconds: number, timeScale: number): number {
  if (seconds <= 0) return 0;
  return Math.max(seconds / timeScale, MIN_REAL_INTERVAL_SECONDS);
}
