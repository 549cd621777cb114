/** DistServe's goodput (`preble sim --goodput`): the highest rate at which a share of requests meets both SLOs. */
import type { SloAttainment } from '../sim/metrics/slo.ts';
import { highestPassingRate } from './capacity.ts';

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
