/**
 * What any placement could gain on one cell (docs/e2.md, "E2 against round robin, cell by cell"): the
 * stream's latency floor (`src/experiments/latency-floor.ts`: each measured request alone on an idle
 * instance with every earlier prompt cached), then each policy's mean and p99, its mean over the floor's,
 * round robin's mean over its own, and the share of the reachable gain it takes.
 *
 *   node --import tsx scripts/latency-floor.ts WORKLOAD RPS [--instances N] [--requests N] [--warmup S]
 *     [--seed S] [--model PRESET] [--policies a,b,...]
 *   e.g. node --import tsx scripts/latency-floor.ts programming 4.5 --instances 2 --requests 3000 --warmup 180
 */
import { costModelPreset } from '../src/core/cost-model/presets.ts';
import { specFloor } from '../src/experiments/latency-floor.ts';
import { fixed } from '../src/report/text-table.ts';
import { runSimulation, type SimSpec } from '../src/sim/run.ts';
import { workloadStream } from '../src/workloads/request-stream.ts';
import { cellArgs } from './cell-args.ts';

const args = cellArgs('latency-floor.ts');
const policies = args.flag('--policies', 'round-robin,e2,e2-plus,cache-aware').split(',');
const base: SimSpec = {
  policy: 'round-robin',
  workload: args.workload,
  instances: args.instances,
  rps: args.rps,
  costModel: costModelPreset(args.flag('--model', 'mistral-7b-a6000')),
  requests: workloadStream(args.workload, {
    requests: args.requests,
    rps: args.rps,
    seed: args.seed,
    instances: args.instances,
  }),
  seed: args.seed,
  warmupSeconds: args.warmup,
};
const floor = specFloor(base).latency;
console.log(
  `${args.workload} x${args.instances} @ ${args.rps}: floor mean / p99 ${fixed(floor.mean, 3)} / ${fixed(floor.p99, 3)} s`,
);
const means = new Map<string, number>();
for (const policy of policies) {
  const { report } = runSimulation({ ...base, policy });
  means.set(policy, report.latency.mean);
  console.log(
    `${policy}: mean / p99 ${fixed(report.latency.mean, 3)} / ${fixed(report.latency.p99, 3)} s, over the floor ${fixed(report.latency.mean / floor.mean, 2)}x`,
  );
}
const rr = means.get('round-robin');
if (rr !== undefined) {
  console.log(
    `round robin over the floor (the most any placement could gain): ${fixed(rr / floor.mean, 2)}x`,
  );
  for (const [policy, mean] of means) {
    if (policy === 'round-robin') continue;
    console.log(
      `${policy}: round robin / ${policy} ${fixed(rr / mean, 2)}x, ${fixed((100 * (rr - mean)) / (rr - floor.mean), 0)}% of the reachable gain`,
    );
  }
}
