/**
 * Splitwise's question (its provisioning grid, §V): how many prompt (prefill) and token (decode)
 * machines, each of any allowed GPU, within the budget of N colocated machines of the first GPU:
 * iso-cost (dollars per hour) or iso-power (watts). Every grid point that spends the budget (no
 * machine of either kind fits beside it) is simulated under the `splitwise` policy; the colocated
 * baseline of N machines runs beside them.
 */
import { describeCriterion } from './capacity.ts';
import { scenarioEconomics } from './economics.ts';
import { type Evaluated, evaluated, recommendation } from './evaluated.ts';
import { choose, type PlanResult, paretoPoints } from './plan.ts';
import { evaluateTasks } from './pool.ts';
import { type PlanRequest, type PlanRun, taskOf } from './request.ts';
import type { ScenarioSpec } from './scenario.ts';
import { type Configuration, enumerateSpace, instanceOf } from './space.ts';

export type BudgetKind = 'cost' | 'power';

export interface SplitwiseOptions {
  readonly budget: BudgetKind;
  /** The baseline: this many colocated machines of the first GPU; their cost or power is the budget. */
  readonly machines: number;
}

/** Where the grid stops: at most this many machines of one kind (keeps a cheap GPU's grid small). */
const MAX_PER_KIND = 16;

export async function planSplitwise(
  request: PlanRequest,
  options: SplitwiseOptions,
  run: PlanRun,
): Promise<PlanResult> {
  const { model, prices } = request.space;
  // A machine per GPU: the first fitting point of the space (smallest TP listed that holds the model).
  const { configurations, skipped } = enumerateSpace({
    ...request.space,
    layouts: [{ kind: 'colocated', replicas: 1 }],
    maxGpus: undefined,
  });
  const machines = new Map<string, Configuration>();
  for (const c of configurations) if (!machines.has(c.gpu)) machines.set(c.gpu, c);
  const gpus = [...machines.keys()];
  const baselineMachine = machines.get(request.space.gpus[0]!);
  if (baselineMachine === undefined)
    throw new Error(`--question splitwise: ${model} fits no listed TP on ${request.space.gpus[0]}`);
  const scenarioOf = (policy: string, instances: ScenarioSpec['fleet']['instances']): ScenarioSpec => ({
    ...request.base,
    policy,
    fleet: { instances },
  });
  const baseline = scenarioOf(baselineMachine.policy, [
    instanceOf(model, baselineMachine, 'mixed', options.machines, prices),
  ]);
  const spend = (s: ScenarioSpec): number | undefined => {
    const e = scenarioEconomics(s);
    return options.budget === 'cost' ? e.costPerHour : e.watts;
  };
  const budget = spend(baseline);
  if (budget === undefined)
    throw new Error(
      `--budget ${options.budget}: ${request.space.gpus[0]} has no listed ${options.budget === 'cost' ? 'price (give --price GPU=USD)' : 'power'}`,
    );
  const unit = new Map(
    gpus.map((g) => [
      g,
      spend(scenarioOf('splitwise', [instanceOf(model, machines.get(g)!, 'mixed', 1, prices)])),
    ]),
  );
  const points: { label: string; grid: object; scenario: ScenarioSpec }[] = [
    {
      label: `baseline: ${options.machines} colocated ${baselineMachine.gpu}`,
      grid: { colocated: options.machines, gpu: baselineMachine.gpu },
      scenario: baseline,
    },
  ];
  for (const promptGpu of gpus)
    for (const tokenGpu of gpus) {
      const p = unit.get(promptGpu);
      const t = unit.get(tokenGpu);
      if (p === undefined || t === undefined) continue;
      for (let prompt = 1; prompt <= MAX_PER_KIND; prompt++)
        for (let token = 1; token <= MAX_PER_KIND; token++) {
          const cost = prompt * p + token * t;
          const full = cost + Math.min(p, t) > budget * (1 + 1e-9);
          if (cost > budget * (1 + 1e-9) || !full) continue;
          const scenario = scenarioOf('splitwise', [
            instanceOf(model, machines.get(promptGpu)!, 'prefill', prompt, prices),
            instanceOf(model, machines.get(tokenGpu)!, 'decode', token, prices),
          ]);
          if (request.space.maxGpus !== undefined && scenarioEconomics(scenario).gpus > request.space.maxGpus)
            continue;
          points.push({
            label: `${prompt} prompt ${promptGpu} + ${token} token ${tokenGpu}`,
            grid: { prompt, promptGpu, token, tokenGpu },
            scenario,
          });
        }
    }
  const { capacities, cached } = await evaluateTasks(
    points.map((p) => taskOf(request, p.scenario)),
    run,
  );
  const items: Evaluated[] = points.map((p, i) => evaluated(p.label, p.grid, p.scenario, capacities[i]!));
  // Within one budget the best fleet is the one with the most capacity (its capacity per dollar at
  // iso-cost); with a target rate, the cheapest that meets it.
  // The colocated baseline competes too: the answer may be not to split.
  const byCapacity = items.filter((e) => e.capacity > 0).sort((a, b) => b.capacity - a.capacity);
  const choice =
    request.rate === undefined
      ? {
          ...(byCapacity[0] === undefined ? {} : { best: recommendation(byCapacity[0]) }),
          ...(byCapacity[1] === undefined ? {} : { runnerUp: recommendation(byCapacity[1]) }),
          bestBy: {},
        }
      : choose(items, 'perGpu', { criterion: request.criterion, rate: request.rate });
  return {
    question: 'splitwise',
    criterion: describeCriterion(request.criterion),
    objective: options.budget === 'cost' ? 'perDollar' : 'perKilowatt',
    ...(request.rate === undefined ? {} : { rate: request.rate }),
    configurations: points.length,
    cached,
    skipped,
    ...choice,
    pareto: paretoPoints(items),
    evaluated: items,
    details: {
      budget: { kind: options.budget, value: budget, machines: options.machines, gpu: baselineMachine.gpu },
      baseline: { label: items[0]!.label, capacity: items[0]!.capacity },
      grid: items.slice(1).map((e) => ({
        ...e.configuration,
        capacity: e.capacity,
        gpus: e.economics.gpus,
        ...(e.economics.costPerHour === undefined ? {} : { costPerHour: e.economics.costPerHour }),
        ...(e.economics.watts === undefined ? {} : { watts: e.economics.watts }),
      })),
    },
  };
}
