/**
 * Where each policy queues requests by prompt length, one cell (docs/e2.md, measurement log step 16):
 * per instance, requests / mean queue wait (arrival to admission) / mean prompt tokens; per prompt-length
 * bin, requests, mean queue wait, mean and p99 latency, and how many of the run's p99 tail fall in it.
 * A policy that sorts prompts by length onto instances shows uneven prompt means and queue waits.
 *
 *   node --import tsx scripts/queue-by-prompt.ts WORKLOAD RPS [--instances N] [--requests N]
 *     [--warmup SECONDS] [--seed S] [--policies a,b] [--options JSON]
 *
 * --options: e2-plus options over its defaults, e.g. '{"laterArrivals":false,"decodeEnds":false}'.
 *
 * WORKLOAD is any `preble sim --workload` value (a generator, azure:FILE, mooncake:FILE).
 */
import { percentiles } from '../src/report/stats.ts';
import type { SimRecord } from '../src/sim/record.ts';
import { PROMPT_BINS as BINS, cellArgs, mean, runCell } from './cell-args.ts';

const cell = cellArgs('queue-by-prompt.ts');
const { workload, rps, instances, requests, warmup, seed, flag } = cell;
const p99 = (xs: number[]) => percentiles(xs).p99;
const queued = (r: SimRecord) => r.start - r.arrival;
const latency = (r: SimRecord) => r.finish - r.arrival;

console.log(
  `${workload} x${instances} @ ${rps} rps, seed ${seed}, ${requests} requests, warm-up ${warmup} s`,
);
for (const policy of flag('--policies', 'e2-plus,kv-cost').split(',')) {
  const { report, result } = runCell(cell, policy);
  const recs = result.records.filter((r) => r.finish >= 0 && r.arrival >= warmup);
  const tail = p99(recs.map(latency));
  const perInstance = Array.from({ length: instances }, (_, i) => {
    const on = recs.filter((r) => r.instance === i);
    return `${on.length} / ${mean(on.map(queued)).toFixed(1)} s / ${mean(on.map((r) => r.promptTokens)).toFixed(0)}`;
  });
  console.log(
    `${policy}: mean ${report.latency.mean.toFixed(2)} p99 ${report.latency.p99.toFixed(2)}; per instance (requests / queue / prompt): ${perInstance.join(', ')}`,
  );
  for (let b = 0; b + 1 < BINS.length; b++) {
    const bin = recs.filter((r) => r.promptTokens >= BINS[b]! && r.promptTokens < BINS[b + 1]!);
    if (bin.length === 0) continue;
    const lat = bin.map(latency);
    console.log(
      `  prompt ${BINS[b]}-${BINS[b + 1]}: ${bin.length} requests, queue ${mean(bin.map(queued)).toFixed(2)} s, latency ${mean(lat).toFixed(2)} / p99 ${p99(lat).toFixed(2)} s, in the run's p99 tail ${bin.filter((r) => latency(r) >= tail).length}`,
    );
  }
}
