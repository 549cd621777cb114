/**
 * `preble plan`: which fleet serves a workload within its SLOs best (per dollar, GPU or kW), or most
 * cheaply at a target rate, by simulated capacity searches over a configuration space (src/search,
 * docs/planning.md). `--question` picks whose question: Vidur's (one configuration), DistServe's
 * (per-phase instances and replicas), Splitwise's (prompt and token machines within a budget) or
 * Aladdin's (workers for a rate, GPUs per worker).
 */
import { join } from 'node:path';
import type { Command } from 'commander';
import { GPU_ALIASES, GPU_SHAPES } from '../core/cost-model/gpu-shapes.ts';
import { MODEL_SHAPES } from '../core/cost-model/model-shapes.ts';
import { isGlobalPolicyName } from '../core/policies/registry.ts';
import { isQueuePolicyName, type QueuePolicyName, queuePolicyNames } from '../core/replica-queue/registry.ts';
import type { CapacityCriterion } from '../search/capacity.ts';
import { type ObjectiveName, objectiveNames } from '../search/economics.ts';
import { type QuestionName, questionNames } from '../search/plan.ts';
import type { Layout, SearchSpace } from '../search/space.ts';
import { parseWorkloadSpec } from '../workloads/traces/registry.ts';
import { ensureWritableDir } from './out-dir.ts';
import { collect, nonNegativeInt, positiveInt, positiveNumber } from './parse.ts';
import { addRegistryHelp } from './registry-help.ts';

interface PlanFlags {
  model: string;
  workload: string;
  slo: string;
  rate?: number;
  gpus: string;
  maxGpus?: number;
  tp: string;
  pp: string;
  batch: string;
  chunk: string;
  queuePolicy: string;
  policy: string;
  layout: string;
  question: string;
  criterion: string;
  target: number;
  delay: number;
  objective?: string;
  price: string[];
  budget: string;
  machines: number;
  maxHelpers: number;
  requests: number;
  seed: number;
  tolerance: number;
  threads?: number;
  cache?: string | false;
  out?: string;
  json?: boolean;
}

export function registerPlan(program: Command): void {
  const command = program
    .command('plan')
    .description(
      'search a configuration space by simulation: the best fleet per dollar, or the cheapest for --rate (docs/planning.md)',
    )
    .requiredOption('--model <shape>', `model shape (${Object.keys(MODEL_SHAPES).join(', ')})`)
    .requiredOption(
      '--workload <w>',
      'a generator (with :KEY=VALUE options), synthetic:..., or azure:FILE / mooncake:FILE / bailian:FILE',
    )
    .requiredOption('--slo <targets>', 'SLO targets in seconds: ttft=S,tpot=S')
    .option(
      '--rate <rps>',
      'target rate: the cheapest fleet meeting it (without: the best rate per dollar)',
      positiveNumber,
    )
    .option('--gpus <list>', 'allowed GPU types', 'a100,h100')
    .option('--max-gpus <n>', 'most GPUs in a fleet', positiveInt)
    .option('--tp <list>', 'tensor-parallel degrees', '1,2,4,8')
    .option('--pp <list>', 'pipeline-parallel degrees', '1')
    .option('--batch <list>', 'batch sizes: most requests an instance runs at once', '32,64,128,256')
    .option('--chunk <list>', 'chunked-prefill token budgets', '512,1024,2048')
    .option('--queue-policy <list>', 'replica queue policies (listed below)', 'fcfs')
    .option('--policy <list>', 'global policies for colocated layouts (listed below)', 'e2')
    .option(
      '--layout <list>',
      'layouts of one unit: NM (N colocated replicas) or NPMD (prefill, decode)',
      '1M',
    )
    .option('--question <q>', `whose question: ${questionNames.join(', ')}`, 'vidur')
    .option(
      '--criterion <c>',
      "capacity criterion: slo (a share meets both SLOs) or delay (Vidur's p99 scheduling delay)",
      'slo',
    )
    .option('--target <share>', 'share of requests that must meet the SLOs (criterion slo)', share, 0.9)
    .option('--delay <s>', 'p99 scheduling-delay bound in seconds (criterion delay)', positiveNumber, 5)
    .option(
      '--objective <o>',
      `rank by ${objectiveNames.join(', ')} (default perDollar where every GPU has a price, else perGpu)`,
    )
    .option('--price <GPU=USD>', 'price of one GPU-hour, for a GPU without one (repeatable)', collect, [])
    .option('--budget <kind>', 'splitwise: iso-cost or iso-power budget (cost, power)', 'cost')
    .option(
      '--machines <n>',
      'splitwise: the budget is this many colocated machines of the first GPU',
      positiveInt,
      4,
    )
    .option(
      '--max-helpers <n>',
      'distserve: most instances of the other phase beside a measured one (docs/planning.md)',
      positiveInt,
      64,
    )
    .option('--requests <n>', 'requests per simulated run', positiveInt, 300)
    .option('--seed <s>', 'random seed', nonNegativeInt, 0)
    .option(
      '--tolerance <share>',
      'capacity search stops when its bracket is this share of the rate',
      share,
      0.02,
    )
    .option('--threads <n>', 'worker threads (default: the available cores; 0: none)', nonNegativeInt)
    .option('--cache <dir>', 'cache directory (default ~/.cache/preble/plan)')
    .option('--no-cache', 'simulate everything, read and write no cache')
    .option(
      '--out <dir>',
      'write plan.json, report.md, pareto.svg/.png and fleet.json (the best fleet) there',
    )
    .option('--json', 'print one JSON object on stdout')
    .action((flags: PlanFlags) => plan(flags));
  addRegistryHelp(command, ['policies', 'queuePolicies', 'workloads']);
}

function share(value: string): number {
  const n = Number(value);
  if (!(n > 0 && n <= 1)) throw new Error(`expected a share in (0, 1], got '${value}'`);
  return n;
}

function list(flag: string, text: string): string[] {
  const items = text.split(',').map((s) => s.trim());
  if (items.some((s) => s === '')) throw new Error(`${flag}: expected a comma list, got '${text}'`);
  return items;
}

function intList(flag: string, text: string): number[] {
  return list(flag, text).map((s) => {
    const n = Number(s);
    if (!Number.isInteger(n) || n <= 0) throw new Error(`${flag}: expected positive integers, got '${text}'`);
    return n;
  });
}

export function parseSlo(text: string): { ttft: number; tpot: number } {
  const values: Record<string, number> = {};
  for (const part of list('--slo', text)) {
    const [key, value, extra] = part.split('=');
    const n = Number(value);
    if ((key !== 'ttft' && key !== 'tpot') || extra !== undefined || !(n > 0))
      throw new Error(`--slo: expected ttft=SECONDS,tpot=SECONDS, got '${text}'`);
    values[key] = n;
  }
  if (values.ttft === undefined || values.tpot === undefined)
    throw new Error(`--slo: expected both ttft and tpot, got '${text}'`);
  return { ttft: values.ttft, tpot: values.tpot };
}

export function parseLayout(text: string): Layout {
  const colocated = /^(\d+)M$/i.exec(text);
  if (colocated !== null && Number(colocated[1]) > 0)
    return { kind: 'colocated', replicas: Number(colocated[1]) };
  const split = /^(\d+)P(\d+)D$/i.exec(text);
  if (split !== null && Number(split[1]) > 0 && Number(split[2]) > 0)
    return { kind: 'disaggregated', prefill: Number(split[1]), decode: Number(split[2]) };
  throw new Error(`--layout: expected NM or NPMD with positive counts (1M, 2P1D), got '${text}'`);
}

function parsePrices(given: readonly string[]): Record<string, number> {
  const prices: Record<string, number> = {};
  for (const text of given) {
    const [gpu, value] = text.split('=');
    const n = Number(value);
    if (gpu === undefined || gpu === '' || !(n >= 0) || value === '')
      throw new Error(`--price: expected GPU=USD (per GPU-hour), got '${text}'`);
    prices[gpu] = n;
  }
  return prices;
}

function checkGpus(gpus: readonly string[]): void {
  const valid = [...Object.keys(GPU_SHAPES), ...Object.keys(GPU_ALIASES)];
  for (const gpu of gpus)
    if (!valid.includes(gpu)) throw new Error(`--gpus: unknown GPU '${gpu}'; valid: ${valid.join(', ')}`);
}

function oneOf<T extends string>(flag: string, value: string, valid: readonly T[]): T {
  if (!(valid as readonly string[]).includes(value))
    throw new Error(`${flag}: expected one of ${valid.join(', ')}, got '${value}'`);
  return value as T;
}

/** The flags as a search: space, base scenario, criterion (throws one line on bad input). */
export function planRequestOf(flags: PlanFlags) {
  if (!Object.hasOwn(MODEL_SHAPES, flags.model))
    throw new Error(
      `--model: unknown model shape '${flags.model}'; valid: ${Object.keys(MODEL_SHAPES).join(', ')}`,
    );
  parseWorkloadSpec(flags.workload);
  const gpus = list('--gpus', flags.gpus);
  checkGpus(gpus);
  const queuePolicies = list('--queue-policy', flags.queuePolicy).map((q) => {
    if (!isQueuePolicyName(q))
      throw new Error(`--queue-policy: unknown queue policy '${q}'; valid: ${queuePolicyNames.join(', ')}`);
    return q as QueuePolicyName;
  });
  const policies = list('--policy', flags.policy).map((p) => {
    if (!isGlobalPolicyName(p)) throw new Error(`--policy: unknown global policy '${p}' (listed in --help)`);
    return p;
  });
  const criterionKind = oneOf('--criterion', flags.criterion, ['slo', 'delay'] as const);
  const criterion: CapacityCriterion =
    criterionKind === 'slo'
      ? { kind: 'slo', target: flags.target }
      : { kind: 'delay', p99Seconds: flags.delay };
  const space: SearchSpace = {
    model: flags.model,
    gpus,
    tensorParallel: intList('--tp', flags.tp),
    pipelineParallel: intList('--pp', flags.pp),
    maxRunning: intList('--batch', flags.batch),
    chunkTokens: intList('--chunk', flags.chunk),
    queuePolicies,
    policies,
    layouts: list('--layout', flags.layout).map(parseLayout),
    ...(flags.maxGpus === undefined ? {} : { maxGpus: flags.maxGpus }),
    prices: parsePrices(flags.price),
  };
  return {
    question: oneOf<QuestionName>('--question', flags.question, questionNames),
    budget: oneOf('--budget', flags.budget, ['cost', 'power'] as const),
    request: {
      base: {
        workload: flags.workload,
        requests: flags.requests,
        seed: flags.seed,
        slo: parseSlo(flags.slo),
      },
      criterion,
      space,
      ...(flags.rate === undefined ? {} : { rate: flags.rate }),
      ...(flags.objective === undefined
        ? {}
        : { objective: oneOf<ObjectiveName>('--objective', flags.objective, objectiveNames) }),
      relativeTolerance: flags.tolerance,
    },
  };
}

async function plan(flags: PlanFlags): Promise<void> {
  const { question, budget, request } = planRequestOf(flags);
  if (flags.out !== undefined) await ensureWritableDir(flags.out, '--out');
  const [{ createProgress }, cacheModule, { planSummary }] = await Promise.all([
    import('./progress.ts'),
    import('../search/cache.ts'),
    import('../search/report.ts'),
  ]);
  const cache =
    flags.cache === false
      ? cacheModule.noCache
      : cacheModule.directoryCache(flags.cache ?? cacheModule.defaultCacheDir());
  let progress: ReturnType<typeof createProgress> | undefined;
  const run = {
    cache,
    ...(flags.threads === undefined ? {} : { threads: flags.threads }),
    onDone: (done: number, total: number) => {
      progress ??= createProgress(total, 'planning', 'configurations');
      progress.update(done);
    },
  };
  const started = performance.now();
  let result: import('../search/plan.ts').PlanResult;
  try {
    if (question === 'vidur') result = await (await import('../search/vidur.ts')).planVidur(request, run);
    else if (question === 'distserve')
      result = await (await import('../search/distserve.ts')).planDistServe(request, run, {
        maxHelpers: flags.maxHelpers,
      });
    else if (question === 'aladdin')
      result = await (await import('../search/aladdin.ts')).planAladdin(request, run);
    else
      result = await (await import('../search/splitwise.ts')).planSplitwise(
        request,
        { budget, machines: flags.machines },
        run,
      );
  } finally {
    (progress as ReturnType<typeof createProgress> | undefined)?.stop();
  }
  const seconds = (performance.now() - started) / 1000;
  const { replayArgs } = await import('../search/replay.ts');
  const replay =
    result.best === undefined
      ? undefined
      : replayArgs(
          request.base,
          result.best,
          result.rate ?? result.best.capacity,
          join(flags.out ?? '.', 'fleet.json'),
        );
  if (flags.out !== undefined)
    await (await import('./plan-output.ts')).writePlanOutputs(flags.out, result, seconds);
  if (flags.json) {
    const { evaluated, ...rest } = result;
    const json = {
      ...rest,
      seconds,
      ...(replay === undefined ? {} : { replay }),
      evaluated: evaluated.map((e) => ({
        label: e.label,
        configuration: e.configuration,
        capacity: e.capacity,
        bracketed: e.bracketed,
        ...e.economics,
        ...e.objectives,
      })),
    };
    process.stdout.write(`${JSON.stringify(json)}\n`);
    return;
  }
  const replayLine =
    replay === undefined || flags.out === undefined ? '' : `\nreplay: preble ${replay.join(' ')}`;
  process.stdout.write(`${planSummary(result, seconds)}${replayLine}\n`);
}
