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
