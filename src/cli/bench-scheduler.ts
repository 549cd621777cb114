import { performance } from 'node:perf_hooks';
import type { Command } from 'commander';
import { runSchedulerBench, type SchedulerBenchResult } from '../bench/scheduler-bench.ts';
import { costModelPreset } from '../core/cost-model/presets.ts';
import { parsePolicyList } from '../core/policies/registry.ts';
import { fixed, textTable } from '../report/text-table.ts';
import { createWorkload } from '../workloads/registry.ts';
import { nonNegativeInt, positiveInt, positiveNumber } from './parse.ts';
import { addRegistryHelp } from './registry-help.ts';

interface BenchSchedulerFlags {
  workload: string;
  instances: number;
  requests: number;
  rps?: number;
  policy: string;
  model: string;
  seed: number;
  repeat: number;
  json?: boolean;
}

export function registerBenchScheduler(bench: Command): void {
  const command = bench
    .command('scheduler')
    .description(
      'routing decisions per second of each global policy on a pre-generated request stream (no engine)',
    )
    .option('--workload <name>', 'workload generator', 'toolbench')
    .option('--instances <n>', 'number of instances', positiveInt, 8)
    .option('--requests <n>', 'requests in the stream', positiveInt, 20_000)
    .option('--rps <r>', 'arrival rate (default: 3 per instance)', positiveNumber)
    .option('--policy <list>', "comma list of policies, or 'all'", 'all')
    .option('--model <preset>', 'cost-model preset', 'mistral-7b-a6000')
    .option('--seed <s>', 'random seed', nonNegativeInt, 0)
    .option('--repeat <n>', 'runs per policy; the median run is reported', positiveInt, 3)
    .option('--json', 'print one JSON object on stdout')
    .action((flags: BenchSchedulerFlags) => benchScheduler(flags));
  addRegistryHelp(command, ['policies', 'presets', 'workloads']);
}

function benchScheduler(flags: BenchSchedulerFlags): void {
  const policies = parsePolicyList(flags.policy);
  const costModel = costModelPreset(flags.model);
  const rps = flags.rps ?? 3 * flags.instances;
  process.stderr.write(`generating ${flags.requests} ${flags.workload} requests at ${rps} req/s...\n`);
  const requests = [
    ...createWorkload(flags.workload, {
      requests: flags.requests,
      rps,
      seed: flags.seed,
      instances: flags.instances,
    }),
  ];
  const results = runSchedulerBench({
    policies,
    instances: flags.instances,
    costModel,
    seed: flags.seed,
    repeat: flags.repeat,
    requests,
    clock: () => performance.now(),
    onPolicyDone: (r) =>
      process.stderr.write(
        `${r.policy}: ${Math.round(r.decisionsPerSec)} decisions/s, p99 ${r.p99DecisionMicros.toFixed(1)} us\n`,
      ),
  });
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify({ workload: flags.workload, instances: flags.instances, requests: flags.requests, results })}\n`,
    );
    return;
  }
  process.stdout.write(
    `${flags.workload}, ${flags.instances} instances, ${flags.requests} requests at ${rps} req/s\n\n`,
  );
  process.stdout.write(`${table(results)}\n`);
}

function table(results: readonly SchedulerBenchResult[]): string {
  return textTable(
    ['policy', 'decisions/s', 'p50 us', 'p99 us', 'tick ms', 'predicted hit'],
    results.map((r) => [
      r.policy,
      Math.round(r.decisionsPerSec),
      fixed(r.p50DecisionMicros, 1),
      fixed(r.p99DecisionMicros, 1),
      fixed(r.tickMillis, 1),
      fixed(r.predictedHitRate, 3),
    ]),
  );
}
