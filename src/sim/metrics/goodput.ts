import type { SloAttainment } from './slo.ts';

export interface GoodputOptions {
  /** A rate expected to meet the target (requests per second, > 0). */
  readonly low: number;
  /** A first guess at a rate that misses it (default 2 × low); doubled until one does. */
  readonly high?: number;
  /** Share of requests that must meet both SLOs (default 0.9, the paper's). */
  readonly target?: number;
  /** Stop when the bracket is this narrow, in requests per second (default: `relativeTolerance` of its upper end). */
  readonly tolerance?: number;
  /** Without `tolerance`: stop when the bracket is this share of its upper end (default 0.01). */
  readonly relativeTolerance?: number;
  /** Give up bracketing after this many doublings (default 20). */
  readonly maxDoublings?: number;
}

export interface GoodputProbe {
  readonly rps: number;
  /** Share meeting both SLOs. */
  readonly attainment: number;
}

export interface GoodputResult {
  /** The highest probed rate meeting the target; 0 when even `low` misses it. */
  readonly rps: number;
  /** False when every doubling still met the target: `rps` is then only a lower bound. */
  readonly bracketed: boolean;
  /** Every run, in the order made (for plots and explanations). */
  readonly probes: readonly GoodputProbe[];
}

/** The bracket of a rate search (`highestPassingRate`). */
export interface RateSearch {
  /** The highest probed rate that passed; 0 when even `low` failed. */
  readonly rps: number;
  /** False when every doubling still passed: `rps` is then only a lower bound. */
  readonly bracketed: boolean;
}

/**
 * The highest rate at which `passes` holds, by doubling from `low` until a rate fails and then
 * bisection. It assumes passing only stops as the rate rises (true of a queueing system on average;
 * a noisy run can break it, in which case the answer is one of the crossing points). Deterministic:
 * the probed rates depend only on the options and the pass/fail answers.
 */
export function highestPassingRate(
  passes: (rps: number) => boolean,
  options: Omit<GoodputOptions, 'target'>,
): RateSearch {
  const { low, maxDoublings = 20 } = options;
  const high = options.high ?? 2 * low;
  if (!(low > 0) || !Number.isFinite(low))
    throw new Error(`goodput: low must be a positive rate, got ${low}`);
  if (!(high > low) || !Number.isFinite(high))
    throw new Error(`goodput: high (${high}) must exceed low (${low})`);
  if (!passes(low)) return { rps: 0, bracketed: true };
  let passing = low;
  let failing = high;
  for (let doublings = 0; passes(failing); doublings++) {
    if (doublings >= maxDoublings) return { rps: failing, bracketed: false };
    passing = failing;
    failing *= 2;
  }
  const tolerance = options.tolerance ?? (options.relativeTolerance ?? 0.01) * failing;
  while (failing - passing > tolerance) {
    const middle = (passing + failing) / 2;
    if (passes(middle)) passing = middle;
    else failing = middle;
  }
  return { rps: passing, bracketed: true };
}

/**
 * Goodput: the highest request rate at which at least `target` of the requests meet both SLOs,
 * by bisection (`highestPassingRate`). Deterministic: a seeded `runAtRate` gives the same result
 * every time.
 */
export function goodput(
  runAtRate: (rps: number) => { readonly sloAttainment?: SloAttainment },
  options: GoodputOptions,
): GoodputResult {
  const target = options.target ?? 0.9;
  const probes: GoodputProbe[] = [];
  const meets = (rps: number): boolean => {
    const attainment = runAtRate(rps).sloAttainment?.both;
    if (attainment === undefined) throw new Error('goodput: runAtRate must summarize with an slo');
    probes.push({ rps, attainment });
    return attainment >= target;
  };
  return { ...highestPassingRate(meets, options), probes };
}
