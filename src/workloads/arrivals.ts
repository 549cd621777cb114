import type { Random } from '../core/random.ts';

/**
 * Arrival times of a Poisson process at `rps` requests per second: independent exponential gaps,
 * so the first request arrives after one gap, not at time zero.
 */
export class PoissonArrivals {
  private time = 0;

  constructor(
    private readonly rps: number,
    private readonly random: Random,
  ) {
    if (!(rps > 0) || !Number.isFinite(rps)) throw new Error(`rps must be a positive number, got ${rps}`);
  }

  /** The next arrival time in seconds (non-decreasing). */
  next(): number {
    this.time += this.random.exponential(this.rps);
    return this.time;
  }
}
