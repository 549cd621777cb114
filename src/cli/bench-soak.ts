import type { Command } from 'commander';
import { nonNegativeInt, positiveInt, positiveNumber } from './parse.ts';

interface BenchSoakFlags {
  seconds: number;
  rps: number;
  replicas: number;
  killEvery: number;
  down: number;
  seed: number;
  json?: boolean;
}

export function registerBenchSoak(bench: Command): void {
  bench
    .command('soak')
    .description(
      'a long mixed run through a gateway process: replica kills and restarts, disconnects, bad requests, bursts; counts every answer',
    )
    .option('--seconds <s>', 'duration of the traffic', positiveNumber, 60)
    .option('--rps <r>', 'mean open-loop request rate', positiveNumber, 40)
    .option('--replicas <n>', 'emulated replicas (separate processes)', positiveInt, 3)
    .option('--kill-every <s>', 'kill a random replica this often', positiveNumber, 10)
    .option('--down <s>', 'seconds a killed replica stays down before it restarts', positiveNumber, 3)
    .option('--seed <s>', 'seed of the traffic mix and the kills', nonNegativeInt, 0)
    .option('--json', 'print one JSON object on stdout')
    .action(async (flags: BenchSoakFlags) => {
      const { runSoak } = await import('../bench/soak.ts'); // here, not above: --help stays quick
      const r = await runSoak({
        seconds: flags.seconds,
        rps: flags.rps,
        replicas: flags.replicas,
        killEverySeconds: flags.killEvery,
        downSeconds: flags.down,
        seed: flags.seed,
        progress: (line) => process.stderr.write(`${line}\n`),
      });
      if (flags.json) {
        const { sent, completed, retried, refused, lost, heapStartMB, heapEndMB, kills } = r;
        process.stdout.write(
          `${JSON.stringify({ sent, completed, retried, refused, lost, heapStartMB, heapEndMB, kills })}\n`,
        );
      } else {
        const lines = [
          `sent        ${r.sent}`,
          `completed   ${r.completed}`,
          `retried     ${r.retried}`,
          `refused     ${Object.entries(r.refused)
            .sort((a, b) => b[1] - a[1])
            .map(([k, v]) => `${k} ${v}`)
            .join(', ')}`,
          `lost        ${r.lost}${r.lostExamples.length > 0 ? ` (${r.lostExamples.join('; ')})` : ''}`,
          `kills       ${r.kills}`,
          `heap        ${r.heapStartMB.toFixed(1)} MB at start, ${r.heapEndMB.toFixed(1)} MB at end`,
        ];
        process.stdout.write(`${lines.join('\n')}\n`);
      }
      if (r.lost > 0) process.exitCode = 1;
    });
}
