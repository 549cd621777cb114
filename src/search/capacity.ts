/**
 * A scenario's capacity: the highest arrival rate at which its simulated runs still meet a criterion,
 * found by doubling then bisection over the rate. Two criteria: SLO attainment (a share of requests
 * meeting the TTFT and/or TPOT targets, DistServe's goodput) and Vidur's (p99 scheduling delay, arrival
 * to admission, under a bound: 5 s in the paper).
 */
import type { SimRecord } from '../sim/record.ts';
import { runSimulation, type SimReport } from '../sim/run.ts';
import { type ScenarioSpec, scenarioSimSpec } from './scenario.ts';

/** The bracket of a rate search (`highestPassingRate`). */
export interface RateSearch {
  /** The highest probed rate that passed; 0 when even `low` failed. */
  readonly rps: number;
  /** False when every doubling still passed: `rps` is then only a lower bound. */
  readonly bracketed: boolean;
}

export interface RateSearchOptions {
  /** A rate expected to pass (requests per second, > 0). */
  readonly low: number;
  /** A first guess at a rate that fails (default 2 × low); doubled until one does. */
  readonly high?: number;
  /** Stop when the bracket is this narrow, in requests per second (default: `relativeTolerance` of its upper end). */
  readonly tolerance?: number;
  /** Without `tolerance`: stop when the bracket is this share of its upper end (default 0.01). */
  readonly relativeTolerance?: number;
  /** Give up bracketing after this many doublings (default 20). */
  readonly maxDoublings?: number;
}

/**
 * The highest rate at which `passes` holds, by doubling from `low` until a rate fails and then
 * bisection. It assumes passing only stops as the rate rises (true of a queueing system on average;
 * a noisy run can break it, in which case the answer is one of the crossing points). Deterministic:
 * the probed rates depend only on the options and the pass/fail answers.
 */
export function highestPassingRate(passes: (rps: number) => boolean, options: RateSearchOptions): RateSearch {
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
 * Options for `highestPassingRate` whose last doubling probes exactly `cap`, starting at or below `low`:
 * for a scenario trusted only up to a rate (DistServe's decode instance: past what its feeding prefill
 * instances sustain, requests reach it no faster and any rate would pass).
 */
export function searchUpTo(cap: number, low: number): { low: number; maxDoublings: number } {
  if (!(cap > 0) || !(low > 0))
    throw new Error(`searchUpTo: cap and low must be positive, got ${cap}, ${low}`);
  const maxDoublings = Math.max(0, Math.ceil(Math.log2(cap / low)) - 1);
  return { low: cap / 2 ** (maxDoublings + 1), maxDoublings };
}

/** What a run must meet for its rate to count. */
export type CapacityCriterion =
  | {
      readonly kind: 'slo';
      /** Share of requests that must meet the targets (default 0.9). */
      readonly target?: number;
      /** Which targets: both (default), or one phase's alone (DistServe's per-phase placement). */
      readonly metric?: 'both' | 'ttft' | 'tpot';
      /**
       * Also: the p99 wait from a prefill's end to its decode's admission stays under this many
       * seconds. TPOT spreads that wait over the output, so a short run at any rate can meet a TPOT
       * target while the decode queue only grows; DistServe's decode phase needs this bound.
       */
      readonly decodeWait?: number;
    }
  | {
      readonly kind: 'delay';
      /** Bound on the p99 scheduling delay in seconds (default 5, Vidur's). */
      readonly p99Seconds?: number;
    };

/** One criterion as a short label ('90% meet ttft+tpot', 'p99 delay < 5 s'). */
export function describeCriterion(criterion: CapacityCriterion): string {
  if (criterion.kind === 'delay') return `p99 scheduling delay < ${criterion.p99Seconds ?? 5} s`;
  const metric = criterion.metric ?? 'both';
  return `${Math.round((criterion.target ?? 0.9) * 100)}% meet ${metric === 'both' ? 'ttft and tpot' : metric}`;
}

/**
 * The p99 of arrival to admission, over every request; one never admitted counts as waiting forever
 * (an overloaded run must not pass on the requests it finished).
 */
export function p99SchedulingDelay(records: readonly SimRecord[]): number {
  return nearestRankP99(records.map((r) => (r.start < 0 ? Number.POSITIVE_INFINITY : r.start - r.arrival)));
}

/** The p99 of prefill end to decode admission over disaggregated requests; one never admitted waits forever. */
export function p99DecodeWait(records: readonly SimRecord[]): number {
  const split = records.filter((r) => r.prefillEnd >= 0);
  return nearestRankP99(
    split.map((r) => (r.decodeStart < 0 ? Number.POSITIVE_INFINITY : r.decodeStart - r.prefillEnd)),
  );
}

/** Nearest-rank p99 (0 for none): interpolating next to an infinite wait would give NaN. */
function nearestRankP99(values: number[]): number {
  if (values.length === 0) return 0;
  values.sort((a, b) => a - b);
  return values[Math.ceil(0.99 * values.length) - 1]!;
}

/** Whether one run meets the criterion. */
export function meetsCriterion(
  criterion: CapacityCriterion,
  report: SimReport,
  records: readonly SimRecord[],
): boolean {
  if (criterion.kind === 'delay') return p99SchedulingDelay(records) < (criterion.p99Seconds ?? 5);
  const attainment = report.sloAttainment;
  if (attainment === undefined) throw new Error('capacity: an SLO criterion needs a scenario with an slo');
  if (criterion.decodeWait !== undefined && p99DecodeWait(records) > criterion.decodeWait) return false;
  return attainment[criterion.metric ?? 'both'] >= (criterion.target ?? 0.9);
}

export interface CapacityProbe {
  readonly rps: number;
  readonly passed: boolean;
  /** Share meeting both SLOs (all criteria report it, for the report). */
  readonly attainment: number;
}

export interface Capacity extends RateSearch {
  readonly probes: readonly CapacityProbe[];
}

export interface CapacityOptions extends Partial<RateSearchOptions> {
  readonly criterion: CapacityCriterion;
}

/** Default first rate: low enough for one small GPU instance, so few scenarios need the retry below. */
export const DEFAULT_LOW_RPS = 0.5;

/**
 * The capacity of `scenario`: the highest rate whose run meets the criterion. When even `low` fails it
 * retries once from a sixteenth of it before answering 0 (a slow model on a small GPU).
 */
export function scenarioCapacity(scenario: ScenarioSpec, options: CapacityOptions): Capacity {
  const probes: CapacityProbe[] = [];
  const passes = (rps: number): boolean => {
    const { report, result } = runSimulation(scenarioSimSpec(scenario, rps));
    // A request no instance can hold is refused at any rate: the configuration cannot serve the workload.
    if ((report.refused ?? 0) > 0) throw new Unservable();
    const passed = meetsCriterion(options.criterion, report, result.records);
    probes.push({ rps, passed, attainment: report.sloAttainment?.both ?? 0 });
    return passed;
  };
  const low = options.low ?? DEFAULT_LOW_RPS;
  const search = { relativeTolerance: 0.02, ...options, low };
  try {
    let result = highestPassingRate(passes, search);
    if (result.rps === 0) {
      const { high: _, ...rest } = search;
      result = highestPassingRate(passes, { ...rest, low: low / 16 });
    }
    return { ...result, probes };
  } catch (error) {
    if (error instanceof Unservable) return { rps: 0, bracketed: true, probes };
    throw error;
  }
}

/** A probe's run refused requests: the search ends at capacity 0. */
class Unservable extends Error {}
