import type { Command } from 'commander';
import { runMemoryBench } from '../bench/memory-bench.ts';
import { costModelPreset } from '../core/cost-model/presets.ts';
import { fixed, textTable } from '../report/text-table.ts';
import { createWorkload } from '../workloads/registry.ts';
import { nonNegativeInt, positiveInt, positiveNumber } from './parse.ts';
import { addRegistryHelp } from './registry-help.ts';

interface BenchMemoryFlags {
  workload: string;
  instances: number;
  requests: number;
  rps?: number;
  every?: number;
  model: string;
  seed: number;
  json?: boolean;
}

export function registerBenchMemory(bench: Command): void {
  const command = bench
    .command('memory')
    .description("E2's tree size and the heap along a long request stream (they must stay flat)")
    .option('--workload <name>', 'workload generator', 'toolbench')
    .option('--instances <n>', 'number of instances', positiveInt, 8)
    .option('--requests <n>', 'requests in the stream', positiveInt, 1_000_000)
    .option('--rps <r>', 'arrival rate (default: 3 per instance)', positiveNumber)
    .option('--every <n>', 'sample every n requests (default: a tenth of the stream)', positiveInt)
    .option('--model <preset>', 'cost-model preset', 'mistral-7b-a6000')
    .option('--seed <s>', 'random seed', nonNegativeInt, 0)
    .option('--json', 'print one JSON object on stdout')
    .action((flags: BenchMemoryFlags) => benchMemory(flags));
  addRegistryHelp(command, ['presets', 'workloads']);
}

function memory(): { heapMB: number; rssMB: number } {
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  return { heapMB: m.heapUsed / 2 ** 20, rssMB: m.rss / 2 ** 20 };
}

function benchMemory(flags: BenchMemoryFlags): void {
  const rps = flags.rps ?? 3 * flags.instances;
  const every = flags.every ?? Math.max(1, Math.floor(flags.requests / 10));
  const stream = createWorkload(flags.workload, {
    requests: flags.requests,
    rps,
    seed: flags.seed,
    instances: flags.instances,
  });
  const samples = runMemoryBench({
    stream,
    instances: flags.instances,
    costModel: costModelPreset(flags.model),
    every,
    memory,
    onSample: (s) =>
      process.stderr.write(`${s.requests} requests: ${s.treeNodes} nodes, heap ${s.heapMB.toFixed(1)} MB\n`),
  });
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify({ workload: flags.workload, instances: flags.instances, samples })}\n`,
    );
    return;
  }
  process.stdout.write(
    `${textTable(
      ['requests', 'stream s', 'tree nodes', 'window', 'cached tokens', 'heap MB', 'rss MB'],
      samples.map((s) => [
        s.requests,
        Math.round(s.streamSeconds),
        s.treeNodes,
        s.windowEntries,
        s.cachedTokens,
        fixed(s.heapMB, 1),
        fixed(s.rssMB, 1),
      ]),
    )}\n`,
  );
}
