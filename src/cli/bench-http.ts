import type { Command } from 'commander';
import { runHttpLoad } from '../bench/http-load.ts';
import { renderTokens } from '../demo/render.ts';
import { percentiles } from '../report/stats.ts';
import { fixed, textTable } from '../report/text-table.ts';
import { createWorkload } from '../workloads/registry.ts';
import { nonNegativeInt, positiveInt, positiveNumber } from './parse.ts';

interface BenchHttpFlags {
  url: string;
  model: string;
  workload: string;
  requests: number;
  rps: number;
  seed: number;
  json?: boolean;
}

export function registerBenchHttp(bench: Command): void {
  bench
    .command('http')
    .description('open-loop load (Poisson) from a workload generator against any OpenAI-compatible URL')
    .requiredOption('--url <url>', 'base URL of the server (gateway or replica)')
    .requiredOption('--model <name>', 'model name to send')
    .option(
      '--workload <name>',
      'workload generator (its token ids become text, one character each)',
      'toolbench',
    )
    .option('--requests <n>', 'requests to send', positiveInt, 200)
    .option('--rps <r>', 'arrival rate', positiveNumber, 4)
    .option('--seed <s>', 'random seed', nonNegativeInt, 0)
    .option('--json', 'print one JSON object on stdout')
    .action((flags: BenchHttpFlags) => benchHttp(flags));
}

async function benchHttp(flags: BenchHttpFlags): Promise<void> {
  new URL(flags.url); // a bad URL fails here with one line
  const requests = [
    ...createWorkload(flags.workload, { requests: flags.requests, rps: flags.rps, seed: flags.seed }),
  ];
  const records = await runHttpLoad({ url: flags.url, model: flags.model, requests, render: renderTokens });
  const ok = records.filter((r) => r.status === 200 && r.ttft >= 0);
  const tpot = ok.filter((r) => r.outputTokens > 1).map((r) => (r.latency - r.ttft) / (r.outputTokens - 1));
  const prompt = ok.reduce((s, r) => s + r.promptTokens, 0);
  const result = {
    url: flags.url,
    workload: flags.workload,
    rps: flags.rps,
    requests: records.length,
    completed: ok.length,
    failed: records.length - ok.length,
    latency: percentiles(ok.map((r) => r.latency)),
    ttft: percentiles(ok.map((r) => r.ttft)),
    tpot: percentiles(tpot),
    cacheHitRate: prompt > 0 ? ok.reduce((s, r) => s + r.cachedTokens, 0) / prompt : 0,
  };
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return;
  }
  const row = (name: string, p: { mean: number; p50: number; p90: number; p99: number }) =>
    [name, fixed(p.mean, 3), fixed(p.p50, 3), fixed(p.p90, 3), fixed(p.p99, 3)] as const;
  process.stdout.write(
    `${result.completed} of ${result.requests} requests answered, cache hit rate ${fixed(result.cacheHitRate, 3)}\n\n` +
      `${textTable(['seconds', 'mean', 'p50', 'p90', 'p99'], [row('latency', result.latency), row('ttft', result.ttft), row('tpot', result.tpot)])}\n`,
  );
}
