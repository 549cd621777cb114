/**
 * DistServe's placement (OSDI 24, Algorithms 1 and 2; seed digest ../shared/research/seed-distserve-vidur.md)
 * by `preble plan --question distserve` for OPT-13B, 66B and 175B on A100-80GB with the paper's chatbot
 * SLOs, against the configurations the paper reports: OPT-175B's prefill instance 3 x 3 (inter-op 3,
 * intra-op 3) and decode 3 x 4, and OPT-13B best without parallelism (its §6.5 ablation). The cells
 * replay each planned fleet at half and all of the rate it was planned for.
 */
import { fixed } from '../report/text-table.ts';
import { defaultCacheDir, directoryCache } from '../search/cache.ts';
import { planDistServeHere } from '../search/distserve.ts';
import type { Evaluated } from '../search/evaluated.ts';
import type { PlanResult } from '../search/plan.ts';
import { scenarioSimSpec } from '../search/scenario.ts';
import type { Configuration, SearchSpace } from '../search/space.ts';
import type { Cell, CellResult, Claim, Experiment, ExperimentOptions } from './types.ts';

/** The paper's chatbot rows (ShareGPT): TTFT and TPOT per model, and the parallelism searched. */
const MODELS = [
  { model: 'opt-13b', slo: { ttft: 0.2, tpot: 0.1 }, tensorParallel: [1, 2, 4], pipelineParallel: [1, 2] },
  {
    model: 'opt-66b',
    slo: { ttft: 0.4, tpot: 0.1 },
    tensorParallel: [1, 2, 4, 8],
    pipelineParallel: [1, 2, 4],
  },
  {
    model: 'opt-175b',
    slo: { ttft: 4, tpot: 0.2 },
    tensorParallel: [2, 3, 4, 8],
    pipelineParallel: [1, 2, 3, 4],
  },
] as const;
type ModelName = (typeof MODELS)[number]['model'];

/** One instance on at most two 8-GPU nodes, as the paper's 4-node testbed allows per instance here. */
const MAX_INSTANCE_GPUS = 16;

const SPACE: Omit<SearchSpace, 'model' | 'tensorParallel' | 'pipelineParallel'> = {
  gpus: ['a100'],
  // DistServe's L_m: 512 tokens saturate an A100 for a 13B model (§4); decode batches up to 128.
  maxRunning: [128],
  chunkTokens: [512],
  queuePolicies: ['fcfs'],
  policies: ['distserve'],
  layouts: [{ kind: 'disaggregated', prefill: 1, decode: 1 }],
  maxGpus: 2 * MAX_INSTANCE_GPUS,
};

const plans = new Map<string, Record<ModelName, PlanResult>>();

function searches(options: Pick<ExperimentOptions, 'requests' | 'seed'>): Record<ModelName, PlanResult> {
  const key = `${options.requests}/${options.seed}`;
  const known = plans.get(key);
  if (known !== undefined) return known;
  const cache = directoryCache(defaultCacheDir());
  const out = {} as Record<ModelName, PlanResult>;
  for (const m of MODELS) {
    process.stderr.write(`distserve-placement: placing ${m.model}\n`);
    out[m.model] = planDistServeHere(
      {
        base: { workload: 'sharegpt-like', requests: options.requests, seed: options.seed, slo: m.slo },
        criterion: { kind: 'slo', target: 0.9 },
        space: {
          ...SPACE,
          model: m.model,
          tensorParallel: m.tensorParallel,
          pipelineParallel: m.pipelineParallel,
        },
        relativeTolerance: 0.02,
      },
      cache,
    );
  }
  plans.set(key, out);
  return out;
}

interface PhaseRow {
  readonly phase: string;
  readonly configuration: string;
  readonly goodput: number;
  readonly goodputPerGpu: number;
  readonly replicas: number;
}

function phases(plan: PlanResult): PhaseRow[] {
  return (plan.details?.phases as PhaseRow[] | undefined) ?? [];
}

/** The best evaluated configuration of a phase (the plan's choice). */
function phaseBest(
  plan: PlanResult,
  phase: 'prefill' | 'decode',
): (Configuration & { phase: string }) | undefined {
  const label = phases(plan).find((p) => p.phase === phase)?.configuration;
  const e: Evaluated | undefined = plan.evaluated.find((x) => x.label === label);
  return e?.configuration as (Configuration & { phase: string }) | undefined;
}

const shape = (c: Configuration | undefined) =>
  c === undefined
    ? 'none'
    : `TP ${c.tensorParallel} x PP ${c.pipelineParallel} (${c.tensorParallel * c.pipelineParallel} GPUs)`;

const optionsOfSpec = new WeakMap<object, Pick<ExperimentOptions, 'requests' | 'seed'>>();
const optionsOf = (results: readonly CellResult[]) => optionsOfSpec.get(results[0]!.cell.spec)!;

export const distservePlacement: Experiment = {
  name: 'distserve-placement',
  title: "DistServe's placement by search: OPT-13B, 66B and 175B on A100s, against the paper's",
  defaultRequests: 200,
  cells(options: ExperimentOptions): Cell[] {
    const p = searches(options);
    const cells: Cell[] = [];
    for (const m of MODELS) {
      const plan = p[m.model];
      if (plan.best === undefined || plan.rate === undefined) continue;
      const scenario = {
        workload: 'sharegpt-like',
        requests: options.requests,
        seed: options.seed,
        slo: m.slo,
        policy: plan.best.policy,
        fleet: { instances: plan.best.instances },
      };
      for (const share of [0.5, 1]) {
        const spec = scenarioSimSpec(scenario, fixed(plan.rate * share, 3));
        optionsOfSpec.set(spec, { requests: options.requests, seed: options.seed });
        cells.push({
          panel: `${m.model} (TTFT ${m.slo.ttft} s, TPOT ${m.slo.tpot} s)`,
          series: 'planned fleet',
          spec,
        });
      }
    }
    return cells;
  },
  claims(results: readonly CellResult[]): Claim[] {
    const p = searches(optionsOf(results));
    const small = ['prefill', 'decode'].map((ph) => phaseBest(p['opt-13b'], ph as 'prefill' | 'decode'));
    const largePrefill = phaseBest(p['opt-175b'], 'prefill');
    const largeDecode = phaseBest(p['opt-175b'], 'decode');
    const gpus = (c: Configuration | undefined) =>
      c === undefined ? 0 : c.tensorParallel * c.pipelineParallel;
    return [
      {
        id: 'opt-13b-no-parallelism',
        source: 'DistServe §6.5 ablation (OPT-13B, ShareGPT, simulated)',
        statement: 'For OPT-13B no parallelism is best: one GPU per instance in each phase',
        paper: 'vLLM++ equals vLLM: no parallelism was best',
        measured: `prefill ${shape(small[0])}; decode ${shape(small[1])}`,
        holds: small.every((c) => c !== undefined && gpus(c) === 1),
      },
      {
        id: 'opt-175b-placement',
        source: 'DistServe §6 (OPT-175B, ShareGPT)',
        statement: 'For OPT-175B the decode instance gets more GPUs than the prefill instance',
        paper: 'prefill inter-op 3 x intra-op 3 (9 GPUs); decode inter-op 3 x intra-op 4 (12 GPUs)',
        measured: `prefill ${shape(largePrefill)}; decode ${shape(largeDecode)}`,
        holds: gpus(largeDecode) > gpus(largePrefill) && gpus(largePrefill) > 0,
      },
    ];
  },
  discuss(results: readonly CellResult[]): string {
    const p = searches(optionsOf(results));
    const lines = [
      '## Setup',
      '',
      '`preble plan --question distserve` (docs/planning.md) per model: A100-80GB instances of TP x PP from the',
      `table below (at most ${MAX_INSTANCE_GPUS} GPUs each), FCFS, prefill chunks of 512 tokens (the paper's L_m for`,
      '13B), decode batches up to 128, the roofline cost model with all-reduces and pipeline stages (the catalog',
      "branch's `roofline:MODEL@GPU[xTP][pPP]`); the paper's chatbot SLOs; sharegpt-like arrivals (Poisson).",
      "Per phase, the configuration of best per-GPU goodput at 90% attainment of that phase's target (Algorithm",
      '1); then replicas = ceil(rate / goodput) per phase for the rate one instance of the stronger phase',
      'sustains, that fleet simulated at it with both targets.',
      '',
      '## Placements',
      '',
      '| model | phase | best configuration | goodput (req/s) | per GPU | replicas |',
      '|---|---|---|---|---|---|',
    ];
    for (const m of MODELS)
      for (const row of phases(p[m.model]))
        lines.push(
          `| ${m.model} | ${row.phase} | ${row.configuration} | ${fixed(row.goodput, 2)} | ${fixed(row.goodputPerGpu, 3)} | ${row.replicas} |`,
        );
    lines.push(
      '',
      '## Every configuration',
      '',
      '| model | configuration | goodput (req/s) | per GPU |',
      '|---|---|---|---|',
    );
    for (const m of MODELS)
      for (const e of p[m.model].evaluated)
        lines.push(
          `| ${m.model} | ${e.label} | ${fixed(e.capacity, 2)}${e.bracketed ? '' : '+'} | ${fixed(e.objectives.perGpu, 3)} |`,
        );
    lines.push('');
    return lines.join('\n');
  },
};
