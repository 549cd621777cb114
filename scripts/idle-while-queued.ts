/**
 * Does a policy leave an instance idle while requests wait elsewhere? One cell (docs/e2.md, "E2 on a
 * production trace"): per policy, over the whole run, the share of time in which some instance has
 * nothing in flight while another has a request waiting for admission, and the time-weighted mean
 * spread (most minus fewest) of requests in flight per instance. A whole-run busy fraction can be
 * even while instances take turns being avoided; these two see it.
 *
 *   node --import tsx scripts/idle-while-queued.ts WORKLOAD RPS [--instances N] [--requests N]
 *     [--seed S] [--policies e2,round-robin,e2.decodeLoad=inflight] [--who K]
 *
 * --who K: the K requests that waited longest while some instance was idle, and for e2-plus the cost
 * parts it priced each instance at when it routed them (docs/e2.md, measurement log step 22).
 *
 * A policy written POLICY.OPTION=VALUE runs with that option (as `preble sim --policy-option`); join
 * several with '+': e2.windowSeconds=30+e2.rebalance=false.
 */

import type { E2PlusInstanceCost } from '../src/core/policies/e2-plus/options.ts';
import { percentiles } from '../src/report/stats.ts';
import type { SimRecord } from '../src/sim/record.ts';
import { cellArgs, mean, onE2PlusDecision, policySpec, runCell } from './cell-args.ts';

const cell = cellArgs('idle-while-queued.ts');
const { workload, rps, instances, requests, seed, flag } = cell;
const who = Number(flag('--who', '0'));

/** e2-plus's priced instances per routed request (other policies route as they do). */
const priced = new Map<string, readonly E2PlusInstanceCost[]>();
if (who > 0) onE2PlusDecision((r, d) => priced.set(r.id, d.costs));

/**
 * Time-weighted measures of the run's per-instance state, from admission and finish times, and per
 * request the time it waited while some instance was idle.
 */
function imbalance(records: readonly SimRecord[]): {
  idleWhileWaiting: number;
  spread: number;
  waitedWhileIdle: Map<SimRecord, number>;
} {
  const events: [number, number, 'flight' | 'wait', 1 | -1, SimRecord][] = [];
  for (const r of records) {
    events.push([r.arrival, r.instance, 'flight', 1, r], [r.finish, r.instance, 'flight', -1, r]);
    events.push([r.arrival, r.instance, 'wait', 1, r], [r.start, r.instance, 'wait', -1, r]);
  }
  events.sort((a, b) => a[0] - b[0]);
  const flight = new Array<number>(instances).fill(0);
  const wait = new Array<number>(instances).fill(0);
  const waiting = new Set<SimRecord>();
  const waitedWhileIdle = new Map<SimRecord, number>();
  let idle = 0;
  let spread = 0;
  let last = events[0]?.[0] ?? 0;
  for (const [t, i, kind, delta, r] of events) {
    const dt = t - last;
    if (dt > 0) {
      if (Math.min(...flight) === 0 && Math.max(...wait) > 0) {
        idle += dt;
        if (who > 0) for (const w of waiting) waitedWhileIdle.set(w, (waitedWhileIdle.get(w) ?? 0) + dt);
      }
      spread += dt * (Math.max(...flight) - Math.min(...flight));
      last = t;
    }
    (kind === 'flight' ? flight : wait)[i]! += delta;
    if (kind === 'wait') delta > 0 ? waiting.add(r) : waiting.delete(r);
  }
  const span = last - (events[0]?.[0] ?? 0);
  return {
    idleWhileWaiting: span > 0 ? idle / span : 0,
    spread: span > 0 ? spread / span : 0,
    waitedWhileIdle,
  };
}

const f = (x: number) => x.toFixed(2);

console.log(`${workload} x${instances} @ ${rps} rps, seed ${seed}, ${requests} requests, whole run`);
for (const spec of flag('--policies', 'e2,round-robin,e2.decodeLoad=inflight').split(',')) {
  const { policy, options } = policySpec(spec);
  const { result } = runCell(cell, policy, options);
  const done = result.records.filter((r) => r.finish >= 0);
  const latency = done.map((r) => r.finish - r.arrival);
  const { idleWhileWaiting, spread, waitedWhileIdle } = imbalance(done);
  const perInstance = new Array<number>(instances).fill(0);
  for (const r of done) perInstance[r.instance]!++;
  console.log(
    `${spec}: mean ${mean(latency).toFixed(2)} s, p99 ${percentiles(latency).p99.toFixed(1)} s, ` +
      `TTFT ${mean(done.map((r) => r.firstToken - r.arrival)).toFixed(2)} s; ` +
      `an instance idle while another has a request waiting ${(100 * idleWhileWaiting).toFixed(1)}% of the time; ` +
      `in flight, most minus fewest ${spread.toFixed(2)}; requests max/mean ${(Math.max(...perInstance) / mean(perInstance)).toFixed(2)}`,
  );
  const longest = [...waitedWhileIdle.entries()].sort((a, b) => b[1] - a[1]).slice(0, who);
  for (const [r, seconds] of longest) {
    console.log(
      `  ${r.id}: waited ${f(r.start - r.arrival)} s on i${r.instance} (${f(seconds)} s of it with an instance idle), arrived ${f(r.arrival)} s, prompt ${r.promptTokens}, output ${r.outputTokens}`,
    );
    for (const c of priced.get(r.id) ?? [])
      console.log(
        `    priced i${c.instance}: total ${f(c.total)} = queued ${f(c.queued)} + prefill ${f(c.prefill)} + decode ${f(c.decode)} + interference ${f(c.interference)} + eviction ${f(c.eviction)}`,
      );
  }
  priced.clear();
}
