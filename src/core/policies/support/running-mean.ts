/**
 * A running mean: the plain mean of the first `horizon` samples, then an exponential moving average
 * with weight 1/horizon, so it is steady at the start and still follows a drifting workload.
 * Until the first sample it reports the prior.
 */
export class RunningMean {
  private count = 0;

  constructor(
    private value: number,
    private readonly horizon: number,
  ) {}

  get mean(): number {
    return this.value;
  }

  get samples(): number {
    return this.count;
  }

  add(sample: number): void {
    this.count++;
    this.value += (sample - this.value) / Math.min(this.count, this.horizon);
  }
}
