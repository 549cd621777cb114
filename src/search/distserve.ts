/**
 * DistServe's question (Algorithms 1 and 2, simplified to one node kind per phase): the instance
 * configuration with the best per-GPU goodput for prefill alone (TTFT target) and for decode alone
 * (TPOT target, and the wait for a decode slot within the TTFT target), then replicas =
 * ceil(rate / goodput) per phase. Our simulator has no prefill-only fleet, so a phase's instance runs
 * beside `HELPERS` instances of the other phase, there so that the other phase does not limit it.
 */

import type { CapacityCache } from './cache.ts';
import { type CapacityCriterion, DEFAULT_LOW_RPS, describeCriterion } from './capacity.ts';
import { type Evaluated, evaluated, type Recommendation, recommendation, verify } from './evaluated.ts';
import { type PlanResult, paretoPoints } from './plan.ts';
import type { Evaluation } from './pool.ts';
import { type PlanRequest, type PlanRun, taskOf } from './request.ts';
import type { ScenarioSpec } from './scenario.ts';
import { type Configuration, configurationLabel, enumerateSpace, instanceOf } from './space.ts';
import { runSteps, runStepsHere, type SearchSteps } from './steps.ts';

/** Instances of the other phase beside the one measured. */
export const HELPERS = 3;

type Phase = 'prefill' | 'decode';

export interface PhasePlan {
  readonly phase: Phase;
  readonly best: Evaluated;
  /** Instances for the rate: ceil(rate / capacity). */
  readonly replicas: number;
}

export async function planDistServe(request: PlanRequest, run: PlanRun): Promise<PlanResult> {
  return runSteps(distServeSteps(request), run);
}

/** The same on this thread, synchronously (experiments). */
export function planDistServeHere(request: PlanRequest, cache: CapacityCache): PlanResult {
  return runStepsHere(distServeSteps(request), cache);
}

/** The search as steps: each yields a round of capacity tasks and receives their answers. */
function* distServeSteps(request: PlanRequest): SearchSteps {
  if (request.criterion.kind !== 'slo')
    throw new Error('--question distserve plans per-phase SLO targets; use --criterion slo');
  const target = request.criterion.target ?? 0.9;
  const { configurations, skipped, reasons } = enumerateSpace({
    ...request.space,
    layouts: [{ kind: 'disaggregated', prefill: 1, decode: 1 }],
    disaggregatedPolicies: ['distserve'],
  });
  if (configurations.length === 0)
    throw new Error(`no configuration of the space fits: ${reasons.slice(0, 3).join('; ')}`);
  const { model, prices } = request.space;
  // Prefill: one prefill instance of each configuration beside HELPERS decode instances of it.
  const prefillScenario = (c: Configuration): ScenarioSpec => ({
    ...request.base,
    policy: 'distserve',
    fleet: {
      instances: [
        instanceOf(model, c, 'prefill', 1, prices),
        instanceOf(model, c, 'decode', HELPERS, prices),
      ],
    },
  });
  // Decode: one decode instance of each configuration fed by HELPERS instances of the best prefill
  // configuration; the search stops at their goodput (beyond it they, not the decode, would limit).
  const decodeScenario = (c: Configuration, feeder: Configuration): ScenarioSpec => ({
    ...request.base,
    policy: 'distserve',
    fleet: {
      instances: [
        instanceOf(model, feeder, 'prefill', HELPERS, prices),
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
  function* phaseItems(phase: Phase, scenarios: readonly ScenarioSpec[], maxRps?: number) {
    const low = request.low ?? DEFAULT_LOW_RPS;
    const tasks = scenarios.map((scenario) => ({
      ...taskOf(request, scenario, criteria[phase]),
      ...(maxRps === undefined ? {} : { maxDoublings: Math.max(1, Math.ceil(Math.log2(maxRps / low))) }),
    }));
    const evaluation: Evaluation = yield tasks;
    const items = configurations.map((c, i) =>
      evaluated(
        `${phase}: ${configurationLabel(c)}`,
        { phase, ...c },
        scenarios[i]!,
        evaluation.capacities[i]!,
        instanceCost(c),
      ),
    );
    return { items, cached: evaluation.cached };
  }
  const prefillRound = yield* phaseItems('prefill', configurations.map(prefillScenario));
  const bestPrefill = [...prefillRound.items]
    .filter((e) => e.capacity > 0)
    .sort((a, b) => b.objectives.perGpu - a.objectives.perGpu)[0];
  const decodeRound =
    bestPrefill === undefined
      ? { items: [], cached: 0 }
      : yield* phaseItems(
          'decode',
          configurations.map((c) => decodeScenario(c, bestPrefill.configuration as Configuration)),
          HELPERS * bestPrefill.capacity,
        );
  const items = [...prefillRound.items, ...decodeRound.items];
  const cached = prefillRound.cached + decodeRound.cached;
  const byPhase = (phase: Phase) =>
    items
      .filter((e) => (e.configuration as { phase: Phase }).phase === phase && e.capacity > 0)
      .sort((a, b) => b.objectives.perGpu - a.objectives.perGpu);
  const prefill = byPhase('prefill');
  const decode = byPhase('decode');
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
  if (prefill[0] === undefined || decode[0] === undefined)
    return { ...base, ...(request.rate === undefined ? {} : { rate: request.rate }) };
  // Without a target rate, the rate one instance of the stronger phase sustains.
  const rate = request.rate ?? Math.max(prefill[0].capacity, decode[0].capacity);
  const fleetFor = (p: Evaluated, d: Evaluated) => {
    const phases: PhasePlan[] = [
      { phase: 'prefill', best: p, replicas: Math.ceil(rate / p.capacity - 1e-9) },
      { phase: 'decode', best: d, replicas: Math.ceil(rate / d.capacity - 1e-9) },
    ];
    return { phases, recommendation: phaseFleet(request, phases, rate) };
  };
  const first = fleetFor(prefill[0], decode[0]);
  const second =
    prefill[1] === undefined && decode[1] === undefined
      ? undefined
      : fleetFor(prefill[1] ?? prefill[0], decode[1] ?? decode[0]);
  return {
    ...base,
    rate,
    best: first.recommendation,
    ...(second === undefined ? {} : { runnerUp: second.recommendation }),
    details: {
      helpers: HELPERS,
      phases: first.phases.map((p) => ({
        phase: p.phase,
        configuration: p.best.label,
        goodput: p.best.capacity,
        bracketed: p.best.bracketed,
        goodputPerGpu: p.best.objectives.perGpu,
        replicas: p.replicas,
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
