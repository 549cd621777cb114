/**
 * DistServe's question (Algorithms 1 and 2, simplified to one node kind per phase): the instance
 * configuration with the best per-GPU goodput for prefill alone (TTFT target) and for decode alone
 * (TPOT target, and the wait for a decode slot within the TTFT target), then replicas =
 * ceil(rate / goodput) per phase.
 *
 * DistServe simulates each phase alone; our simulator has no prefill-only fleet, so a measured instance
 * runs beside helper instances of the other phase, as many as it takes for them not to be the limit:
 * - a decode instance is fed by instances of the best prefill configuration: at first
 *   max(HELPERS, ceil(rate / prefill goodput)) (Algorithm 1's n), its search capped at what they sustain;
 *   while its goodput is still only a lower bound at that cap, the feeders are doubled and it is
 *   searched again from there (up to `maxHelpers`);
 * - a prefill instance runs beside HELPERS decode instances of its own configuration; where the
 *   decode round then shows they sustain no more than the prefill's goodput, it is measured again beside
 *   ceil(2 x prefill goodput / decode goodput) of them (and the decode round redone if the best
 *   prefill changes).
 */

import type { CapacityCache } from './cache.ts';
import { type CapacityCriterion, DEFAULT_LOW_RPS, describeCriterion, searchUpTo } from './capacity.ts';
import { type Evaluated, evaluated, type Recommendation, recommendation, verify } from './evaluated.ts';
import { type PlanResult, paretoPoints } from './plan.ts';
import type { Evaluation } from './pool.ts';
import { type PlanRequest, type PlanRun, taskOf } from './request.ts';
import type { ScenarioSpec } from './scenario.ts';
import { type Configuration, configurationLabel, enumerateSpace, instanceOf } from './space.ts';
import { runSteps, runStepsHere, type SearchSteps } from './steps.ts';
import type { CapacityTask } from './task.ts';

/** Helper instances of the other phase a measurement starts with, at least. */
export const HELPERS = 3;
/** Most helper instances one measurement may take; a goodput still unbracketed there stays a lower bound. */
export const MAX_HELPERS = 64;

/**
 * Prefill instances feeding one measured decode instance at `rate`: Algorithm 1's n =
 * ceil(rate / prefill goodput), at least HELPERS, at most `maxHelpers` (the planner and the gateway's
 * live advice both size the decode measurement this way). `prefillCapacity` must be positive.
 */
export function decodeFeeders(rate: number, prefillCapacity: number, maxHelpers = MAX_HELPERS): number {
  return Math.min(maxHelpers, Math.max(HELPERS, Math.ceil(rate / prefillCapacity - 1e-9)));
}
/** Rounds of re-measuring prefill instances whose helpers fell short (each may redo the decode round). */
const PREFILL_ROUNDS = 2;

export interface DistServeOptions {
  /** Most helper instances beside one measured instance (default `MAX_HELPERS`). */
  readonly maxHelpers?: number;
}

type Phase = 'prefill' | 'decode';

/** A phase's measured configuration: the space point, its phase, and the helpers beside it. */
export type PhaseConfiguration = Configuration & { readonly phase: Phase; readonly helpers: number };

export interface PhasePlan {
  readonly phase: Phase;
  readonly best: Evaluated;
  /** Instances for the rate: ceil(rate / capacity). */
  readonly replicas: number;
}

export async function planDistServe(
  request: PlanRequest,
  run: PlanRun,
  options: DistServeOptions = {},
): Promise<PlanResult> {
  return runSteps(distServeSteps(request, options), run);
}

/** The same on this thread, synchronously (experiments). */
export function planDistServeHere(
  request: PlanRequest,
  cache: CapacityCache,
  options: DistServeOptions = {},
): PlanResult {
  return runStepsHere(distServeSteps(request, options), cache);
}

/** One capacity search of a round: the scenario, where it starts, and the rate its helpers cap it at. */
interface Job {
  readonly index: number;
  readonly helpers: number;
  readonly scenario: ScenarioSpec;
  /** A decode search's first rate and doublings (`searchUpTo`: its last probe is what the feeders sustain). */
  readonly search?: { readonly low: number; readonly maxDoublings: number };
}

const bestByPerGpu = (items: readonly Evaluated[]): Evaluated | undefined =>
  [...items].filter((e) => e.capacity > 0).sort((a, b) => b.objectives.perGpu - a.objectives.perGpu)[0];

/** The search as steps: each yields a round of capacity tasks and receives their answers. */
function* distServeSteps(request: PlanRequest, options: DistServeOptions): SearchSteps {
  if (request.criterion.kind !== 'slo')
    throw new Error('--question distserve plans per-phase SLO targets; use --criterion slo');
  const target = request.criterion.target ?? 0.9;
  const maxHelpers = options.maxHelpers ?? MAX_HELPERS;
  if (!Number.isInteger(maxHelpers) || maxHelpers < 1)
    throw new Error(`maxHelpers must be a whole number >= 1, got ${maxHelpers}`);
  const { configurations, skipped, reasons } = enumerateSpace({
    ...request.space,
    layouts: [{ kind: 'disaggregated', prefill: 1, decode: 1 }],
    disaggregatedPolicies: ['distserve'],
  });
  if (configurations.length === 0)
    throw new Error(`no configuration of the space fits: ${reasons.slice(0, 3).join('; ')}`);
  const { model, prices } = request.space;
  const indices = configurations.map((_, i) => i);
  // Prefill: one prefill instance of each configuration beside `helpers` decode instances of it.
  const prefillScenario = (c: Configuration, helpers: number): ScenarioSpec => ({
    ...request.base,
    policy: 'distserve',
    fleet: {
      instances: [
        instanceOf(model, c, 'prefill', 1, prices),
        instanceOf(model, c, 'decode', helpers, prices),
      ],
    },
  });
  // Decode: one decode instance of each configuration fed by `helpers` instances of the best prefill.
  const decodeScenario = (c: Configuration, feeder: Configuration, helpers: number): ScenarioSpec => ({
    ...request.base,
    policy: 'distserve',
    fleet: {
      instances: [
        instanceOf(model, feeder, 'prefill', helpers, prices),
        instanceOf(model, c, 'decode', 1, prices),
      ],
    },
  });
  const criteria: Record<Phase, CapacityCriterion> = {
    prefill: { kind: 'slo', target, metric: 'ttft' },
    decode: { kind: 'slo', target, metric: 'tpot', decodeWait: request.base.slo.ttft },
  };
  const instanceCost = (c: Configuration): ScenarioSpec => ({
    ...request.base,
    policy: 'distserve',
    fleet: { instances: [instanceOf(model, c, 'mixed', 1, prices)] },
  });
  let cached = 0;
  /** One round of capacity searches; answers in the jobs' order. */
  function* measure(phase: Phase, jobs: readonly Job[]): Generator<CapacityTask[], Evaluated[], Evaluation> {
    const tasks = jobs.map(
      (job): CapacityTask => ({ ...taskOf(request, job.scenario, criteria[phase]), ...job.search }),
    );
    const evaluation: Evaluation = yield tasks;
    cached += evaluation.cached;
    return jobs.map((job, k) => {
      const c = configurations[job.index]!;
      const configuration: PhaseConfiguration = { phase, helpers: job.helpers, ...c };
      return evaluated(
        `${phase}: ${configurationLabel(c)}`,
        configuration,
        job.scenario,
        evaluation.capacities[k]!,
        instanceCost(c),
      );
    });
  }
  /** Every configuration's decode goodput, fed by `feeder`, its helpers doubled until bracketed. */
  function* decodeRound(feeder: Evaluated): Generator<CapacityTask[], Evaluated[], Evaluation> {
    const feederConfig = feeder.configuration as Configuration;
    const first = decodeFeeders(request.rate ?? 0, feeder.capacity, maxHelpers);
    // The search stops at what the feeders sustain: past it, requests reach the decode no faster.
    const job = (index: number, helpers: number, low = request.low ?? DEFAULT_LOW_RPS): Job => ({
      index,
      helpers,
      scenario: decodeScenario(configurations[index]!, feederConfig, helpers),
      search: searchUpTo(helpers * feeder.capacity, low),
    });
    const items = yield* measure(
      'decode',
      indices.map((i) => job(i, first)),
    );
    const helpersOf = (e: Evaluated) => (e.configuration as PhaseConfiguration).helpers;
    for (;;) {
      const open = indices.filter((i) => !items[i]!.bracketed && helpersOf(items[i]!) < maxHelpers);
      if (open.length === 0) return items;
      const again = yield* measure(
        'decode',
        open.map((i) => job(i, Math.min(maxHelpers, 2 * helpersOf(items[i]!)), items[i]!.capacity)),
      );
      open.forEach((i, k) => {
        items[i] = again[k]!;
      });
    }
  }
  // At least HELPERS decode instances beside a prefill one, but never more than `maxHelpers` allows.
  const prefillHelpers = Math.min(HELPERS, maxHelpers);
  const prefill = yield* measure(
    'prefill',
    indices.map((i) => ({
      index: i,
      helpers: prefillHelpers,
      scenario: prefillScenario(configurations[i]!, prefillHelpers),
    })),
  );
  let bestPrefill = bestByPerGpu(prefill);
  let decode: Evaluated[] = bestPrefill === undefined ? [] : yield* decodeRound(bestPrefill);
  for (let round = 0; round < PREFILL_ROUNDS && bestPrefill !== undefined; round++) {
    // Prefill instances whose decode helpers sustain no more than the prefill's goodput.
    const short = indices.flatMap((i) => {
      const p = prefill[i]!;
      const d = decode[i]!;
      const helpers = (p.configuration as PhaseConfiguration).helpers;
      const wanted = Math.min(maxHelpers, Math.ceil((2 * p.capacity) / d.capacity));
      return p.capacity > 0 && d.capacity > 0 && helpers * d.capacity <= p.capacity && wanted > helpers
        ? [{ index: i, helpers: wanted, scenario: prefillScenario(configurations[i]!, wanted) }]
        : [];
    });
    if (short.length === 0) break;
    const again = yield* measure('prefill', short);
    short.forEach((job, k) => {
      prefill[job.index] = again[k]!;
    });
    const next = bestByPerGpu(prefill);
    // A new best, or the same one re-measured with a different goodput: the feeders were sized from it.
    if (next?.label !== bestPrefill.label || next?.capacity !== bestPrefill.capacity)
      decode = next === undefined ? [] : yield* decodeRound(next);
    bestPrefill = next;
  }
  const items = [...prefill, ...decode];
  const byPhase = (phase: Phase) =>
    items
      .filter((e) => (e.configuration as { phase: Phase }).phase === phase && e.capacity > 0)
      .sort((a, b) => b.objectives.perGpu - a.objectives.perGpu);
  const prefillRanked = byPhase('prefill');
  const decodeRanked = byPhase('decode');
  const base = {
    question: 'distserve' as const,
    criterion: `${describeCriterion(criteria.prefill)} (prefill), ${describeCriterion(criteria.decode)} (decode)`,
    objective: 'perGpu' as const,
    configurations: items.length,
    cached,
    skipped: skipped * 2,
    bestBy: {},
    pareto: paretoPoints(items),
    evaluated: items,
  };
  if (prefillRanked[0] === undefined || decodeRanked[0] === undefined)
    return { ...base, ...(request.rate === undefined ? {} : { rate: request.rate }) };
  // Without a target rate, the rate one instance of the stronger phase sustains.
  const rate = request.rate ?? Math.max(prefillRanked[0].capacity, decodeRanked[0].capacity);
  const fleetFor = (p: Evaluated, d: Evaluated) => {
    const phases: PhasePlan[] = [
      { phase: 'prefill', best: p, replicas: Math.ceil(rate / p.capacity - 1e-9) },
      { phase: 'decode', best: d, replicas: Math.ceil(rate / d.capacity - 1e-9) },
    ];
    return { phases, recommendation: phaseFleet(request, phases, rate) };
  };
  const first = fleetFor(prefillRanked[0], decodeRanked[0]);
  const second =
    prefillRanked[1] === undefined && decodeRanked[1] === undefined
      ? undefined
      : fleetFor(prefillRanked[1] ?? prefillRanked[0], decodeRanked[1] ?? decodeRanked[0]);
  return {
    ...base,
    rate,
    best: first.recommendation,
    ...(second === undefined ? {} : { runnerUp: second.recommendation }),
    details: {
      phases: first.phases.map((p) => ({
        phase: p.phase,
        configuration: p.best.label,
        goodput: p.best.capacity,
        bracketed: p.best.bracketed,
        goodputPerGpu: p.best.objectives.perGpu,
        replicas: p.replicas,
        helpers: (p.best.configuration as PhaseConfiguration).helpers,
      })),
    },
  };
}

/** The fleet of both phases' instances for the rate, simulated at it as a whole (both SLOs). */
function phaseFleet(request: PlanRequest, phases: readonly PhasePlan[], rate: number): Recommendation {
  const { model, prices } = request.space;
  const scenario: ScenarioSpec = {
    ...request.base,
    policy: 'distserve',
    fleet: {
      instances: phases.map((p) => {
        const c = p.best.configuration as Configuration;
        return instanceOf(model, c, p.phase, p.replicas, prices);
      }),
    },
  };
  const check = verify(scenario, rate, {
    kind: 'slo',
    target: (request.criterion as { target?: number }).target ?? 0.9,
  });
  const label = phases.map((p) => `${p.replicas} × ${p.best.label}`).join(' + ');
  return recommendation(
    { ...phases[0]!.best, label, configuration: { phases: phases.map((p) => p.best.configuration) } },
    scenario,
    rate,
    check,
  );
}
