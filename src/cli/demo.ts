import type { Command } from 'commander';
import { parsePolicyList } from '../core/policies/registry.ts';
import { type DemoResult, runDemo } from '../demo/demo.ts';
import { fixed, textTable } from '../report/text-table.ts';
import { nonNegativeInt, positiveInt, positiveNumber } from './parse.ts';

interface DemoFlags {
  replicas: number;
  workload: string;
  requests: number;
  rps: number;
  policy: string;
  model: string;
  timeScale: number;
  seed: number;
  json?: boolean;
}

export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description(
      'emulated replicas + the gateway on local ports, a shared-prefix workload over real HTTP, policies compared',
    )
    .option('--replicas <n>', 'emulated replicas', positiveInt, 4)
    .option('--workload <name>', 'workload generator', 'video-qa')
    .option('--requests <n>', 'requests per policy', positiveInt, 300)
    .option('--rps <r>', 'arrival rate in emulated seconds', positiveNumber, 6)
    .option('--policy <list>', "policies to compare, or 'all'", 'e2,round-robin,least-load,cache-aware')
    .option('--model <preset>', "replicas' cost-model preset", 'mistral-7b-a6000')
    .option('--time-scale <x>', 'replicas run this much faster than real time', positiveNumber, 10)
    .option('--seed <s>', 'random seed', nonNegativeInt, 0)
    .option('--json', 'print one JSON object on stdout')
    .action((flags: DemoFlags) => demo(flags));
}

async function demo(flags: DemoFlags): Promise<void> {
  const policies = parsePolicyList(flags.policy);
  process.stderr.write(
    `${flags.replicas} emulated ${flags.model} replicas (${flags.timeScale}x real time) behind the gateway; ` +
      `${flags.requests} ${flags.workload} requests at ${flags.rps} req/s per policy\n`,
  );
  const results = await runDemo(
    {
      replicas: flags.replicas,
      workload: flags.workload,
      requests: flags.requests,
      rps: flags.rps,
      policies,
      model: flags.model,
      timeScale: flags.timeScale,
      seed: flags.seed,
    },
    (r) =>
      process.stderr.write(
        `${r.policy}: mean latency ${r.latency.mean.toFixed(2)} s, hit rate ${r.cacheHitRate.toFixed(2)}\n`,
      ),
  );
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ results })}\n`);
    return;
  }
  process.stdout.write(`\n${demoTable(results)}\n\nTimes are in the replicas' emulated seconds.\n`);
}

function demoTable(results: readonly DemoResult[]): string {
  return textTable(
    ['policy', 'lat mean s', 'lat p99 s', 'ttft mean s', 'ttft p99 s', 'hit rate', 'requests per replica'],
    results.map((r) => [
      r.policy,
      fixed(r.latency.mean, 2),
      fixed(r.latency.p99, 2),
      fixed(r.ttft.mean, 2),
      fixed(r.ttft.p99, 2),
      fixed(r.cacheHitRate, 3),
      r.perInstance.map((i) => i.requests).join(' / '),
    ]),
  );
}
