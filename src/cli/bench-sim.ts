import { performance } from 'node:perf_hooks';
import type { Command } from 'commander';
import { costModelPreset } from '../core/cost-model/presets.ts';
import { fleetRun, runSimulation } from '../sim/run.ts';
import { createWorkload } from '../workloads/registry.ts';
import { fleetFromFlag } from './fleet-file.ts';
import { nonNegativeInt, positiveInt, positiveNumber } from './parse.ts';
import { addRegistryHelp } from './registry-help.ts';

interface BenchSimFlags {
  workload: string;
  instances: number;
  requests: number;
  rps?: number;
  policy: string;
  model: string;
  seed: number;
  fleet?: string;
  json?: boolean;
}

export function registerBenchSim(bench: Command): void {
  const command = bench
    .command('sim')
    .description('simulator speed: simulated requests and events per second of wall time')
    .option('--workload <name>', 'workload generator', 'toolbench')
    .option('--instances <n>', 'number of instances', positiveInt, 16)
    .option(
      '--fleet <fleet>',
      'instances one by one instead (docs/fleets.md), e.g. 8P8D with --policy distserve',
    )
    .option('--requests <n>', 'requests to simulate', positiveInt, 100_000)
    .option('--rps <r>', 'arrival rate (default: 4 per instance)', positiveNumber)
    .option('--policy <name>', 'global policy', 'e2')
    .option('--model <preset>', 'cost-model preset', 'mistral-7b-a6000')
    .option('--seed <s>', 'random seed', nonNegativeInt, 0)
    .option('--json', 'print one JSON object on stdout')
    .action((flags: BenchSimFlags) => benchSim(flags));
  addRegistryHelp(command, ['policies', 'presets', 'workloads']);
}

function benchSim(flags: BenchSimFlags): void {
  const fleet = flags.fleet === undefined ? undefined : fleetFromFlag(flags.fleet, flags.model);
  const instances = fleet?.instances.length ?? flags.instances;
  const rps = flags.rps ?? 4 * instances;
  const started = performance.now();
  const { report, result } = runSimulation({
    policy: flags.policy,
    workload: flags.workload,
    instances,
    ...(fleet === undefined ? {} : fleetRun(fleet)),
    rps,
    costModel: costModelPreset(flags.model),
    seed: flags.seed,
    requests: () =>
      createWorkload(flags.workload, { requests: flags.requests, rps, seed: flags.seed, instances }),
    onProgress: (n) => {
      if (n % 10_000 === 0) process.stderr.write(`${n} requests simulated\n`);
    },
  });
  const wall = (performance.now() - started) / 1000;
  const out = {
    workload: flags.workload,
    instances,
    ...(flags.fleet === undefined ? {} : { fleet: flags.fleet }),
    requests: report.requests,
    policy: flags.policy,
    wallSeconds: wall,
    simulatedSeconds: result.durationSeconds,
    requestsPerSec: report.requests / wall,
    eventsPerSec: result.events / wall,
    iterationsPerSec: result.iterations / wall,
    meanLatency: report.latency.mean,
  };
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(out)}\n`);
    return;
  }
  process.stdout.write(
    `${out.requests} ${out.workload} requests on ${out.instances} instances (${out.policy}): ${wall.toFixed(1)} s wall for ` +
      `${out.simulatedSeconds.toFixed(0)} s simulated\n` +
      `${Math.round(out.requestsPerSec)} requests/s, ${Math.round(out.eventsPerSec)} events/s, ` +
      `${Math.round(out.iterationsPerSec)} engine iterations/s\n`,
  );
}
