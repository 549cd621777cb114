/**
 * `preble bench plan` (`npm run bench:plan`): the planner's speed on the acceptance case, one model,
 * a workload, SLOs and two GPU types over at least 100 configurations, with no cache, printing the
 * wall time and configurations per second.
 */
import { performance } from 'node:perf_hooks';
import type { Command } from 'commander';
import { noCache } from '../search/cache.ts';
import { planVidur } from '../search/vidur.ts';
import { nonNegativeInt } from './parse.ts';
import { parseSlo } from './plan.ts';

interface BenchPlanFlags {
  threads?: number;
  json?: boolean;
}

/** The acceptance case: llama3-8b, sharegpt-like, two GPUs × TP 1, 2, 4 × four batch sizes × three chunks × two queue policies. */
export const BENCH_PLAN_ARGS = {
  model: 'llama3-8b',
  workload: 'sharegpt-like',
  slo: 'ttft=1,tpot=0.1',
  gpus: ['a100', 'h100'],
  tensorParallel: [1, 2, 4],
  maxRunning: [32, 64, 128, 256],
  chunkTokens: [512, 1024, 2048],
  queuePolicies: ['fcfs', 'lpm'] as const,
  requests: 300,
};

export function registerBenchPlan(bench: Command): void {
  bench
    .command('plan')
    .description(
      'planner speed: `preble plan` over 144 configurations without a cache, wall time and configurations per second',
    )
    .option('--threads <n>', 'worker threads (default: the available cores)', nonNegativeInt)
    .option('--json', 'print one JSON object on stdout')
    .action((flags: BenchPlanFlags) => benchPlan(flags));
}

async function benchPlan(flags: BenchPlanFlags): Promise<void> {
  const a = BENCH_PLAN_ARGS;
  const started = performance.now();
  const plan = await planVidur(
    {
      base: { workload: a.workload, requests: a.requests, seed: 0, slo: parseSlo(a.slo) },
      criterion: { kind: 'slo', target: 0.9 },
      space: {
        model: a.model,
        gpus: a.gpus,
        tensorParallel: a.tensorParallel,
        pipelineParallel: [1],
        maxRunning: a.maxRunning,
        chunkTokens: a.chunkTokens,
        queuePolicies: a.queuePolicies,
        policies: ['e2'],
        layouts: [{ kind: 'colocated', replicas: 1 }],
      },
      relativeTolerance: 0.02,
    },
    { cache: noCache, ...(flags.threads === undefined ? {} : { threads: flags.threads }) },
  );
  const seconds = (performance.now() - started) / 1000;
  const runs = plan.evaluated.reduce((sum, e) => sum + e.probes, 0);
  const figures = {
    configurations: plan.configurations,
    simulations: runs,
    seconds,
    configurationsPerSecond: plan.configurations / seconds,
    best: plan.best?.label,
    bestCapacity: plan.best?.capacity,
    runnerUp: plan.runnerUp?.label,
  };
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(figures)}\n`);
    return;
  }
  process.stdout.write(
    [
      `plan: ${a.model}, ${a.workload}, slo ${a.slo}, GPUs ${a.gpus.join(' and ')}`,
      `${plan.configurations} configurations (${runs} simulations of at least ${a.requests} requests each) in ${seconds.toFixed(1)} s: ${figures.configurationsPerSecond.toFixed(2)} configurations/s`,
      `best: ${plan.best?.label ?? 'none'} at ${plan.best?.capacity.toFixed(2) ?? '-'} req/s; runner-up: ${plan.runnerUp?.label ?? 'none'}`,
    ].join('\n') + '\n',
  );
}
