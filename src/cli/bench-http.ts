import type { Command } from 'commander';
import type { HttpRecord } from '../bench/http-load.ts';
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
      'a generator, or azure:FILE / mooncake:FILE / bailian:FILE (token ids become text, one character each)',
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
    import('../workloads/request-stream.ts'),
  ]);
  new URL(flags.url); // a bad URL fails here with one line
  const stream = workloadStream(flags.workload, {
    requests: flags.requests,
    seed: flags.seed,
    ...(flags.rps === undefined ? {} : { rps: flags.rps }),
  });
  const requests = [...stream()];
  const records = await runHttpLoad({ url: flags.url, model: flags.model, requests, render: renderTokens });
  const ok = records.filter((r) => r.status === 200 && r.ttft >= 0 && r.error === undefined);
  const errors = errorKinds(records);
  const tpot = ok.filter((r) => r.outputTokens > 1).map((r) => (r.latency - r.ttft) / (r.outputTokens - 1));
  const prompt = ok.reduce((s, r) => s + r.promptTokens, 0);
  const result = {
    url: flags.url,
    workload: flags.workload,
    rps: flags.rps ?? null,
    requests: records.length,
    completed: ok.length,
    failed: records.length - ok.length,
    errors,
    latency: percentiles(ok.map((r) => r.latency)),
    ttft: percentiles(ok.map((r) => r.ttft)),
    tpot: percentiles(tpot),
    cacheHitRate: prompt > 0 ? ok.reduce((s, r) => s + r.cachedTokens, 0) / prompt : 0,
  };
  // Nothing answered: the numbers would all be zeros; say why, and fail.
  const nothing =
    ok.length === 0
      ? `no request succeeded (${records.length} failed: ${errors.map((e) => `${e.count} x ${e.kind}`).join(', ')})`
      : undefined;
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(result)}\n`);
    if (nothing !== undefined) throw new Error(nothing);
    return;
  }
  if (nothing !== undefined) throw new Error(nothing);
  const row = (name: string, p: { mean: number; p50: number; p90: number; p99: number }) =>
    [name, fixed(p.mean, 3), fixed(p.p50, 3), fixed(p.p90, 3), fixed(p.p99, 3)] as const;
  process.stdout.write(
    `${result.completed} of ${result.requests} requests answered, cache hit rate ${fixed(result.cacheHitRate, 3)}\n\n` +
      `${textTable(['seconds', 'mean', 'p50', 'p90', 'p99'], [row('latency', result.latency), row('ttft', result.ttft), row('tpot', result.tpot)])}\n` +
      (errors.length === 0
        ? ''
        : `\n${textTable(
            ['failed requests', 'count'],
            errors.map((e) => [e.kind, String(e.count)]),
          )}\n`),
  );
}

/** Failed requests counted by kind (status and error code, stream error, connection error), most first. */
function errorKinds(records: readonly HttpRecord[]): { kind: string; count: number }[] {
  const counts = new Map<string, number>();
  for (const r of records) {
    const kind = r.error ?? (r.status === 200 ? undefined : `HTTP ${r.status}`);
    if (kind !== undefined) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  }
  return [...counts]
    .map(([kind, count]) => ({ kind, count }))
    .sort((a, b) => b.count - a.count || a.kind.localeCompare(b.kind));
}
