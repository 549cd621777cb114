/**
 * Aladdin's worker count from the arrival rate (seed 004, Aladdin §5, Eq. 7): N_w = ceil(k5·r_a + c5)
 * for r_a > R. Exported for `preble plan` ("workers for a rate"): fit (k5, c5) from (rate, workers
 * needed) pairs, then size.
 */
import { leastSquares } from '../cost-model/least-squares.ts';

export interface WorkerLine {
  readonly k5: number;
  readonly c5: number;
}

export interface WorkerSample {
  readonly rate: number;
  readonly workers: number;
}

/** Eq. 7; at least one worker. */
export function workersForRate(line: WorkerLine, rate: number): number {
  return Math.max(1, Math.ceil(line.k5 * rate + line.c5 - 1e-9));
}

/**
 * Least squares over the samples; undefined while they do not span two rates. A line through fewer
 * than two distinct rates is the proportional one through the origin and the samples' mean.
 */
export function fitWorkerLine(samples: readonly WorkerSample[]): WorkerLine | undefined {
  if (samples.length === 0) return undefined;
  const rates = new Set(samples.map((s) => s.rate));
  if (rates.size < 2) {
    const rate = samples[0]!.rate;
    if (rate <= 0) return undefined;
    const mean = samples.reduce((sum, s) => sum + s.workers, 0) / samples.length;
    return { k5: mean / rate, c5: 0 };
  }
  const [k5, c5] = leastSquares(
    samples.map((s) => [s.rate, 1]),
    samples.map((s) => s.workers),
  ) as [number, number];
  return { k5, c5 };
}

/**
 * Aladdin's low-rate guard: below R too few requests arrive per heartbeat to stand for the length
 * distributions. The standard error of the mean of n samples is σ/√n, so n ≥ (σ / (ε·μ))² arrivals keep
 * it under a share ε of the mean μ; R is that n over the heartbeat.
 */
export function lowRateGuard(
  lengthMean: number,
  lengthStd: number,
  share: number,
  heartbeat: number,
): number {
  if (lengthMean <= 0 || share <= 0 || heartbeat <= 0) return 0;
  const n = (lengthStd / (share * lengthMean)) ** 2;
  return n / heartbeat;
}
