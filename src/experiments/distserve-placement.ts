/**
 * DistServe's placement (OSDI 24, Algorithms 1 and 2; seed digest ../shared/research/seed-distserve-vidur.md)
 * by `preble plan --question distserve` for OPT-13B, 66B and 175B on A100-80GB with the paper's chatbot
 * SLOs, against the configurations the paper reports: OPT-175B's prefill instance 3 x 3 (inter-op 3,
 * intra-op 3) and decode 3 x 4, and OPT-13B best without parallelism (its §6.5 ablation). The cells
 * replay each planned fleet at half and all of the rate it was planned for.
 */
import { fixed } from '../report/text-table.ts';
import { type CapacityCache, defaultCacheDir, directoryCache } from '../search/cache.ts';
import { type PhaseConfiguration, planDistServeHere } from '../search/distserve.ts';
import { type Evaluated, ranked } from '../search/evaluated.ts';
import type { PlanResult } from '../search/plan.ts';
import type { PlanRequest } from '../search/request.ts';
import { scenarioSimSpec } from '../search/scenario.ts';
import type { Configuration, SearchSpace } from '../search/space.ts';
import { planVidurHere } from '../search/vidur.ts';
import { perGpuBy, phaseCeilings, type Variant, whyLines } from './distserve-placement-why.ts';
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

const OPT13B = MODELS[0];
/**
 * OPT-13B's TP-only searches that separate the causes: the SLOs scaled by 2 and 4 (DistServe's "SLO
 * Scale"), and DistServe's Figure 1 workload (13B on one A100: 512 tokens in, 64 out), whose prompts
 * TP 1 prefills within the TTFT target.
 */
const VARIANTS = [
  { workload: 'sharegpt-like', scale: 1 },
  { workload: 'sharegpt-like', scale: 2 },
  { workload: 'sharegpt-like', scale: 4 },
  { workload: 'synthetic:in=512,out=64', scale: 1 },
  { workload: 'synthetic:in=512,out=64', scale: 4 },
] as const;
const VARIANT_TP = [1, 2, 4] as const;
/** Requests whose lengths the zero-load ceilings count (the most a capacity run carries). */
const CEILING_REQUESTS = 4000;

interface Searches {
  /** DistServe's question per model (Algorithm 1), on sharegpt-like. */
  readonly placed: Record<ModelName, PlanResult>;
  /** vLLM++ (§6.4): one colocated OPT-13B instance of each TP x PP, both SLOs. */
  readonly vllmPlusPlus: PlanResult;
  /** The same two questions for OPT-13B, TP only, per variant. */
  readonly variants: readonly Variant[];
}

const plans = new Map<string, Searches>();

function placementRequest(
  options: Pick<ExperimentOptions, 'requests' | 'seed'>,
  m: {
    readonly model: string;
    readonly slo: { readonly ttft: number; readonly tpot: number };
    readonly tensorParallel: readonly number[];
    readonly pipelineParallel: readonly number[];
  },
  workload = 'sharegpt-like',
  tensorParallel: readonly number[] = m.tensorParallel,
  pipelineParallel: readonly number[] = m.pipelineParallel,
): PlanRequest {
  return {
    base: { workload, requests: options.requests, seed: options.seed, slo: m.slo },
    criterion: { kind: 'slo', target: 0.9 },
    space: { ...SPACE, model: m.model, tensorParallel, pipelineParallel },
    relativeTolerance: 0.02,
  };
}

/** vLLM++: the request's space as one colocated instance per point, ranked by per-GPU goodput at both SLOs. */
function vllmPlusPlus(request: PlanRequest, cache: CapacityCache): PlanResult {
  return planVidurHere(
    {
      ...request,
      space: { ...request.space, policies: ['round-robin'], layouts: [{ kind: 'colocated', replicas: 1 }] },
      objective: 'perGpu',
    },
    cache,
  );
}

function searches(options: Pick<ExperimentOptions, 'requests' | 'seed'>): Searches {
  const key = `${options.requests}/${options.seed}`;
  const known = plans.get(key);
  if (known !== undefined) return known;
  const cache = directoryCache(defaultCacheDir());
  const placed = {} as Record<ModelName, PlanResult>;
  for (const m of MODELS) {
    process.stderr.write(`distserve-placement: placing ${m.model}\n`);
    placed[m.model] = planDistServeHere(placementRequest(options, m), cache);
  }
  process.stderr.write('distserve-placement: vLLM++ and the variants for opt-13b\n');
  const variants = VARIANTS.map((v): Variant => {
    const slo = { ttft: OPT13B.slo.ttft * v.scale, tpot: OPT13B.slo.tpot * v.scale };
    const request = placementRequest(options, { ...OPT13B, slo }, v.workload, VARIANT_TP, [1]);
    return {
      ...v,
      slo,
      placed: planDistServeHere(request, cache),
      vllmPlusPlus: vllmPlusPlus(request, cache),
    };
  });
  const out: Searches = {
    placed,
    vllmPlusPlus: vllmPlusPlus(placementRequest(options, OPT13B), cache),
    variants,
  };
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
    const p = searches(options).placed;
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
    const s = searches(optionsOf(results));
    const p = s.placed;
    const colocated = perGpuBy(s.vllmPlusPlus);
    const colocatedBest = ranked(s.vllmPlusPlus.evaluated, 'perGpu')[0]?.configuration as
      | Configuration
      | undefined;
    const largePrefill = phaseBest(p['opt-175b'], 'prefill');
    const largeDecode = phaseBest(p['opt-175b'], 'decode');
    const gpus = (c: Configuration | undefined) =>
      c === undefined ? 0 : c.tensorParallel * c.pipelineParallel;
    return [
      {
        id: 'opt-13b-no-parallelism',
        source: 'DistServe §6.4 ablation, Figure 11 (OPT-13B, ShareGPT, simulated)',
        statement:
          'For OPT-13B served colocated with its parallelism enumerated (vLLM++), no parallelism (one GPU) has the best per-GPU goodput',
        paper:
          'vLLM++ performs the same as vLLM: "the default non-parallelism setting has the best per-GPU goodput"',
        measured: `best per GPU: ${colocatedBest === undefined ? 'none reaches 90%' : shape(colocatedBest)}; per GPU (req/s) ${colocated.map((r) => `TP ${r.tp} x PP ${r.pp} ${fixed(r.perGpu, 3)}`).join(', ')}`,
        holds: gpus(colocatedBest) === 1,
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
    const options = optionsOf(results);
    const s = searches(options);
    const p = s.placed;
    const lines = [
      '## Setup',
      '',
      '`preble plan --question distserve` (docs/planning.md) per model: A100-80GB instances of TP x PP from the',
      `table below (at most ${MAX_INSTANCE_GPUS} GPUs each), FCFS, prefill chunks of 512 tokens (the paper's L_m for`,
      '13B), decode batches up to 128, the roofline cost model with all-reduces and pipeline stages (the catalog',
      "branch's `roofline:MODEL@GPU[xTP][pPP]`); the paper's chatbot SLOs; sharegpt-like arrivals (Poisson).",
      "Per phase, the configuration of best per-GPU goodput at 90% attainment of that phase's target (Algorithm",
      '1); then replicas = ceil(rate / goodput) per phase for the rate one instance of the stronger phase',
      'sustains, that fleet simulated at it with both targets. A measured instance runs beside helper instances',
      "of the other phase (the table's last column), as many as it takes for them not to be its limit: a decode",
      "instance's search stops at what its prefill feeders sustain and their number doubles while it still passes",
      'there (docs/planning.md).',
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
      '| model | configuration | goodput (req/s) | per GPU | helpers |',
      '|---|---|---|---|---|',
    );
    for (const m of MODELS)
      for (const e of p[m.model].evaluated)
        lines.push(
          `| ${m.model} | ${e.label} | ${fixed(e.capacity, 2)}${e.bracketed ? '' : '+'} | ${fixed(e.objectives.perGpu, 3)} | ${(e.configuration as PhaseConfiguration).helpers} |`,
        );
    const ceilings = MODELS.slice(0, 2).map((m) => ({
      model: m.model,
      ttft: m.slo.ttft,
      rows: phaseCeilings({
        model: m.model,
        gpu: 'a100-80g',
        tensorParallel: m.tensorParallel.filter((tp) => tp > 1 || m.model === 'opt-13b'),
        workload: 'sharegpt-like',
        requests: CEILING_REQUESTS,
        seed: options.seed,
        ttft: m.slo.ttft,
        batch: SPACE.maxRunning[0]!,
      }),
    }));
    lines.push(
      '',
      ...whyLines({
        requests: CEILING_REQUESTS,
        seed: options.seed,
        slo: OPT13B.slo,
        vllmPlusPlus: s.vllmPlusPlus,
        placed: p['opt-13b'],
        variants: s.variants,
        ceilings,
      }),
      '',
    );
    return lines.join('\n');
  },
};
