import type { Command } from 'commander';
import { fixed, textTable } from '../report/text-table.ts';
import { nonNegativeInt, positiveInt, positiveNumber } from './parse.ts';

interface BenchGatewayFlags {
  rps: number;
  seconds: number;
  concurrency: number;
  tokenizer: string;
  tokenizerThreads?: number;
  promptChars?: number;
  json?: boolean;
}

export function registerBenchGateway(bench: Command): void {
  bench
    .command('upstream', { hidden: true })
    .description('an OpenAI upstream that answers at once (for bench gateway)')
    .requiredOption('--port <n>', 'port (0: any free port)', nonNegativeInt)
    .action(async (flags: { port: number }) => {
      const { startFakeUpstream } = await import('../bench/fake-upstream.ts');
      const { server, url } = await startFakeUpstream(flags.port);
      process.stdout.write(`listening on ${url}\n`);
      await new Promise<void>((resolve) => process.once('SIGTERM', () => server.close(() => resolve())));
    });
  bench
    .command('gateway')
    .description(
      "the gateway's added latency against calling the replica directly, and its highest sustained rate",
    )
    .option('--rps <r>', 'open-loop rate for the latency comparison', positiveNumber, 500)
    .option('--seconds <s>', 'duration of each measurement', positiveNumber, 5)
    .option('--concurrency <n>', 'closed-loop clients for the highest rate', positiveInt, 64)
    .option('--tokenizer <mode>', "the gateway's --tokenizer: chars or hf:PATH", 'chars')
    .option(
      '--tokenizer-threads <n>',
      "the gateway's --tokenizer-threads (hf:PATH; 0: encode on the event loop)",
      nonNegativeInt,
    )
    .option(
      '--prompt-chars <n>',
      'prompt length in characters (English words; default: a 59-character question)',
      positiveInt,
    )
    .option('--json', 'print one JSON object on stdout')
    .action((flags: BenchGatewayFlags) => benchGateway(flags));
}

async function benchGateway(flags: BenchGatewayFlags): Promise<void> {
  // Loaded here rather than above, so `preble --help` and a bad flag answer at once.
  const [{ benchPrompt, maxRate, openLoop, SHORT_PROMPT }, { startPreble }] = await Promise.all([
    import('../bench/gateway-load.ts'),
    import('../bench/preble-process.ts'),
  ]);
  const upstream = await startPreble(['bench', 'upstream', '--port', '0']);
  const prompt = flags.promptChars === undefined ? SHORT_PROMPT : benchPrompt(flags.promptChars);
  const gateway = await startPreble([
    'serve',
    '--port',
    '0',
    '--replica',
    upstream.url,
    '--policy',
    'e2',
    '--process-metrics',
    '--tokenizer',
    flags.tokenizer,
    ...(flags.tokenizerThreads === undefined ? [] : ['--tokenizer-threads', String(flags.tokenizerThreads)]),
  ]).catch(async (error: unknown) => {
    await upstream.stop();
    throw error;
  });
  try {
    const rows = [];
    for (const stream of [false, true]) {
      process.stderr.write(
        `${stream ? 'streaming' : 'non-streaming'}: direct, through the gateway, highest rate...\n`,
      );
      await openLoop(gateway.url, Math.min(100, flags.rps), 1, stream, prompt); // warm both processes up
      const direct = await openLoop(upstream.url, flags.rps, flags.seconds, stream, prompt);
      await eventLoopLag(gateway.url); // reading resets the gateway's lag histogram
      const through = await openLoop(gateway.url, flags.rps, flags.seconds, stream, prompt);
      const lag = await eventLoopLag(gateway.url);
      const rate = await maxRate(gateway.url, flags.concurrency, flags.seconds, stream, prompt);
      rows.push({
        mode: stream ? 'streaming' : 'non-streaming',
        directP50Ms: direct.p50,
        directP99Ms: direct.p99,
        gatewayP50Ms: through.p50,
        gatewayP99Ms: through.p99,
        addedP50Ms: through.p50 - direct.p50,
        addedP99Ms: through.p99 - direct.p99,
        loopLagP99Ms: lag.p99,
        loopLagMaxMs: lag.max,
        maxRequestsPerSec: rate,
      });
    }
    if (flags.json) {
      process.stdout.write(
        `${JSON.stringify({
          rps: flags.rps,
          seconds: flags.seconds,
          concurrency: flags.concurrency,
          tokenizer: flags.tokenizer,
          tokenizerThreads: flags.tokenizerThreads ?? null,
          promptChars: prompt.length,
          results: rows,
        })}\n`,
      );
      return;
    }
    process.stdout.write(
      `${textTable(
        [
          'mode',
          'direct p50/p99 ms',
          'gateway p50/p99 ms',
          'added p50 ms',
          'added p99 ms',
          'loop lag p99/max ms',
          'max req/s',
        ],
        rows.map((r) => [
          r.mode,
          `${fixed(r.directP50Ms, 2)} / ${fixed(r.directP99Ms, 2)}`,
          `${fixed(r.gatewayP50Ms, 2)} / ${fixed(r.gatewayP99Ms, 2)}`,
          fixed(r.addedP50Ms, 2),
          fixed(r.addedP99Ms, 2),
          `${fixed(r.loopLagP99Ms, 1)} / ${fixed(r.loopLagMaxMs, 1)}`,
          Math.round(r.maxRequestsPerSec),
        ]),
      )}\n(latency at ${flags.rps} req/s open loop; max rate with ${flags.concurrency} concurrent clients; one upstream that answers at once; loop lag: how late the gateway's event loop ran during the open loop; tokenizer ${flags.tokenizer}${flags.tokenizerThreads === undefined ? '' : ` with ${flags.tokenizerThreads} threads`}, ${prompt.length}-character prompts)\n`,
    );
  } finally {
    await gateway.stop();
    await upstream.stop();
  }
}

/**
 * The gateway's event-loop delay since the last call, in ms (p99 and max), from its `--process-metrics`:
 * prom-client resets the delay histogram on every scrape.
 */
async function eventLoopLag(url: string): Promise<{ p99: number; max: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const read = (name: string) => {
    const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
    if (m === null) throw new Error(`the gateway's /metrics has no ${name}`);
    return Number(m[1]) * 1000;
  };
  return { p99: read('nodejs_eventloop_lag_p99_seconds'), max: read('nodejs_eventloop_lag_max_seconds') };
}
