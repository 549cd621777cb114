/**
 * Does a policy leave an instance idle while requests wait elsewhere? One cell (docs/e2.md, "E2 on a
 * production trace"): per policy, over the whole run, the share of time in which some instance has
 * nothing in flight while another has a request waiting for admission, and the time-weighted mean
 * spread (most minus fewest) of requests in flight per instance. A whole-run busy fraction can be
 * even while instances take turns being avoided; these two see it.
 *
 *   node --import tsx scripts/idle-while-queued.ts WORKLOAD RPS [--instances N] [--requests N]
 *     [--seed S] [--policies e2,round-robin,e2.decodeLoad=inflight]
 *
 * A policy written POLICY.OPTION=VALUE runs with that option (as `preble sim --policy-option`); join
 * several with '+': e2.windowSeconds=30+e2.rebalance=false.
 */
import { percentiles } from '../src/report/stats.ts';
import type { SimRecord } from '../src/sim/record.ts';
import { cellArgs, mean, policySpec, runCell } from './cell-args.ts';

const cell = cellArgs('idle-while-queued.ts');
const { workload, rps, instances, requests, seed, flag } = cell;

/** Time-weighted measures of the run's per-instance state, from admission and finish times. */
function imbalance(records: readonly SimRecord[]): { idleWhileWaiting: number; spread: number } {
  const events: [number, number, 'flight' | 'wait', 1 | -1][] = [];
  for (const r of records) {
    events.push([r.arrival, r.instance, 'flight', 1], [r.finish, r.instance, 'flight', -1]);
    events.push([r.arrival, r.instance, 'wait', 1], [r.start, r.instance, 'wait', -1]);
  }
  events.sort((a, b) => a[0] - b[0]);
  const flight = new Array<number>(instances).fill(0);
  const wait = new Array<number>(instances).fill(0);
  let idle = 0;
  let spread = 0;
  let last = events[0]?.[0] ?? 0;
  for (const [t, i, kind, delta] of events) {
    const dt = t - last;
    if (dt > 0) {
      if (Math.min(...flight) === 0 && Math.max(...wait) > 0) idle += dt;
      spread += dt * (Math.max(...flight) - Math.min(...flight));
      last = t;
    }
    (kind === 'flight' ? flight : wait)[i]! += delta;
  }
  const span = last - (events[0]?.[0] ?? 0);
  return { idleWhileWaiting: span > 0 ? idle / span : 0, spread: span > 0 ? spread / span : 0 };
}

console.log(`${workload} x${instances} @ ${rps} rps, seed ${seed}, ${requests} requests, whole run`);
for (const spec of flag('--policies', 'e2,round-robin,e2.decodeLoad=inflight').split(',')) {
  const { policy, options } = policySpec(spec);
  const { result } = runCell(cell, policy, options);
  const done = result.records.filter((r) => r.finish >= 0);
  const latency = done.map((r) => r.finish - r.arrival);
  const { idleWhileWaiting, spread } = imbalance(done);
  const perInstance = new Array<number>(instances).fill(0);
  for (const r of done) perInstance[r.instance]!++;
  console.log(
    `${spec}: mean ${mean(latency).toFixed(2)} s, p99 ${percentiles(latency).p99.toFixed(1)} s, ` +
      `TTFT ${mean(done.map((r) => r.firstToken - r.arrival)).toFixed(2)} s; ` +
      `an instance idle while another has a request waiting ${(100 * idleWhileWaiting).toFixed(1)}% of the time; ` +
      `in flight, most minus fewest ${spread.toFixed(2)}; requests max/mean ${(Math.max(...perInstance) / mean(perInstance)).toFixed(2)}`,
  );
}
