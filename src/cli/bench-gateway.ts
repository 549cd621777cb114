import type { Command } from 'commander';
import { fixed, textTable } from '../report/text-table.ts';
import { nonNegativeInt, positiveInt, positiveNumber } from './parse.ts';

interface BenchGatewayFlags {
  rps: number;
  seconds: number;
  concurrency: number;
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
    .option('--json', 'print one JSON object on stdout')
    .action((flags: BenchGatewayFlags) => benchGateway(flags));
}

async function benchGateway(flags: BenchGatewayFlags): Promise<void> {
  // Loaded here rather than above, so `preble --help` and a bad flag answer at once.
  const [{ maxRate, openLoop }, { startPreble }] = await Promise.all([
    import('../bench/gateway-load.ts'),
    import('../bench/preble-process.ts'),
  ]);
  const upstream = await startPreble(['bench', 'upstream', '--port', '0']);
  const gateway = await startPreble(['serve', '--port', '0', '--replica', upstream.url, '--policy', 'e2']);
  try {
    const rows = [];
    for (const stream of [false, true]) {
      process.stderr.write(
        `${stream ? 'streaming' : 'non-streaming'}: direct, through the gateway, highest rate...\n`,
      );
      await openLoop(gateway.url, 100, 1, stream); // warm both processes up
      const direct = await openLoop(upstream.url, flags.rps, flags.seconds, stream);
      const through = await openLoop(gateway.url, flags.rps, flags.seconds, stream);
      const rate = await maxRate(gateway.url, flags.concurrency, flags.seconds, stream);
      rows.push({
        mode: stream ? 'streaming' : 'non-streaming',
        directP50Ms: direct.p50,
        directP99Ms: direct.p99,
        gatewayP50Ms: through.p50,
        gatewayP99Ms: through.p99,
        addedP50Ms: through.p50 - direct.p50,
        addedP99Ms: through.p99 - direct.p99,
        maxRequestsPerSec: rate,
      });
    }
    if (flags.json) {
      process.stdout.write(
        `${JSON.stringify({ rps: flags.rps, seconds: flags.seconds, concurrency: flags.concurrency, results: rows })}\n`,
      );
      return;
    }
    process.stdout.write(
      `${textTable(
        ['mode', 'direct p50/p99 ms', 'gateway p50/p99 ms', 'added p50 ms', 'added p99 ms', 'max req/s'],
        rows.map((r) => [
          r.mode,
          `${fixed(r.directP50Ms, 2)} / ${fixed(r.directP99Ms, 2)}`,
          `${fixed(r.gatewayP50Ms, 2)} / ${fixed(r.gatewayP99Ms, 2)}`,
          fixed(r.addedP50Ms, 2),
          fixed(r.addedP99Ms, 2),
          Math.round(r.maxRequestsPerSec),
        ]),
      )}\n(latency at ${flags.rps} req/s open loop; max rate with ${flags.concurrency} concurrent clients; one upstream that answers at once)\n`,
    );
  } finally {
    await gateway.stop();
    await upstream.stop();
  }
}
