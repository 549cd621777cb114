import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';

/**
 * A seeded random source. Every random choice in Preble takes one, so that the same seed
 * gives the same workload, the same routing and the same simulation, byte for byte.
 */
export class Random {
  private readonly gen: ReturnType<typeof xoroshiro128plus>;

  constructor(seed: number) {
    this.gen = xoroshiro128plus(seed | 0);
  }

  /** Uniform in [0, 1). */
  next(): number {
    return uniformFloat64(this.gen);
  }

  /** Uniform integer in [min, max], both inclusive. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** One element of a non-empty array. */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty array');
    return items[this.int(0, items.length - 1)] as T;
  }

  /** Exponential with the given rate (mean 1/rate): Poisson inter-arrival gaps. */
  exponential(rate: number): number {
    return -Math.log(1 - this.next()) / rate;
  }

  /** Standard normal (Box-Muller; one of the pair is discarded to keep the stream simple). */
  normal(mean = 0, std = 1): number {
    const u = 1 - this.next();
    const v = this.next();
    return mean + std * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  /** Log-normal with the given mean and standard deviation of the resulting values. */
  logNormal(mean: number, std: number): number {
    const sigma2 = Math.log(1 + (std * std) / (mean * mean));
    const mu = Math.log(mean) - sigma2 / 2;
    return Math.exp(this.normal(mu, Math.sqrt(sigma2)));
  }

  /** A derived, independent stream (for sub-generators that must not shift each other's draws). */
  fork(): Random {
    return new Random(Math.floor(this.next() * 0x7fffffff));
  }
}

/**
 * Truncated Zipf over ranks 0..n-1 with exponent s: P(k) proportional to 1/(k+1)^s.
 * Sampling is O(log n) by binary search over the cumulative weights.
 */
export class ZipfSampler {
  private readonly cumulative: Float64Array;

  constructor(n: number, s: number) {
    if (n <= 0) throw new Error('Zipf needs at least one rank');
    this.cumulative = new Float64Array(n);
    let total = 0;
    for (let k = 0; k < n; k++) {
      total += 1 / (k + 1) ** s;
      this.cumulative[k] = total;
    }
    for (let k = 0; k < n; k++) this.cumulative[k]! /= total;
  }

  sample(random: Random): number {
    const u = random.next();
    let lo = 0;
    let hi = this.cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.cumulative[mid]! > u) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }
}
