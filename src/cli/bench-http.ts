import type { Command } from 'commander';
import { fixed, textTable } from '../report/text-table.ts';
import { nonNegativeInt, positiveInt, positiveNumber } from './parse.ts';

interface BenchHttpFlags {
  url: string;
  model: string;
  workload: string;
  requests: number;
  rps?: number;
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
      '--workload <w>',
      'a generator, or azure:FILE / mooncake:FILE (token ids become text, one character each)',
      'toolbench',
    )
    .option('--requests <n>', 'requests to send', positiveInt, 200)
    .option(
      '--rps <r>',
      "arrival rate (generators: Poisson, default 4; traces: re-timed to it, else the trace's own timing)",
      positiveNumber,
    )
    .option('--seed <s>', 'random seed', nonNegativeInt, 0)
    .option('--json', 'print one JSON object on stdout')
    .action((flags: BenchHttpFlags) => benchHttp(flags));
}

async function benchHttp(flags: BenchHttpFlags): Promise<void> {
  // Loaded here rather than above, so `preble --help` and a bad flag answer at once.
  const [{ runHttpLoad }, { renderTokens }, { percentiles }, { workloadStream }] = await Promise.all([
    import('../bench/http-load.ts'),
    import('../demo/render.ts'),
    import('../report/stats.ts'),
    import('./workload-stream.ts'),
  ]);
  new URL(flags.url); // a bad URL fails here with one line
  const stream = workloadStream(flags.workload, {
    requests: flags.requests,
    seed: flags.seed,
    ...(flags.rps === undefined ? {} : { rps: flags.rps }),
  });
  const requests = [...stream()];
  const records = await runHttpLoad({ url: flags.url, model: flags.model, requests, render: renderTokens });
  const ok = records.filter((r) => r.status === 200 && r.ttft >= 0);
  const tpot = ok.filter((r) => r.outputTokens > 1).map((r) => (r.latency - r.ttft) / (r.outputTokens - 1));
  const prompt = ok.reduce((s, r) => s + r.promptTokens, 0);
  const result = {
    url: flags.url,
    workload: flags.workload,
    rps: flags.rps ?? null,
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
