/**
 * Who waits on a Mooncake-format trace (docs/e2.md, measurement log step 22): the trace's requests
 * grouped by their first block hash (requests that open with the same block share an application's
 * system prompt, or a conversation's start), and per policy each group's request count, mean latency
 * and time to first token, how many of its requests each instance took, how many later arrivals the
 * engine admitted before each of them on its instance (an lpm queue lets a request with more cached
 * overtake; told apart by the order they were routed in, since a trace's rows often share an
 * arrival instant), and its first request's wait. Whole run.
 *
 *   node --import tsx scripts/trace-classes.ts FILE RPS [--instances N] [--requests N] [--seed S]
 *     [--policies e2-plus,cache-aware,kv-cost] [--top K]
 *
 * --top: the K largest groups by request count (default 3); the rest are counted as 'other'.
 * A policy written POLICY.OPTION=VALUE runs with that option (see idle-while-queued.ts).
 */
import { parseMooncakeJsonl } from '../src/workloads/traces/mooncake-jsonl.ts';
import { readTraceText } from '../src/workloads/traces/read.ts';
import { cellArgs, mean, policySpec, routedAfter, runCell } from './cell-args.ts';

const args = process.argv.slice(2);
const file = args[0];
if (file === undefined) throw new Error('usage: trace-classes.ts FILE RPS [...]');
const cell = cellArgs('trace-classes.ts', [`mooncake:${file}`, ...args.slice(1)]);
const { rps, instances, requests, seed, flag } = cell;
const top = Number(flag('--top', '3'));

// Row k of the trace is request mooncake-k (the replay numbers rows from the first one kept).
const firstBlock = Array.from(parseMooncakeJsonl(readTraceText(file)), (row) => row.hashIds[0] ?? -1);
const sizes = new Map<number, number>();
for (const b of firstBlock.slice(0, requests)) sizes.set(b, (sizes.get(b) ?? 0) + 1);
const groups = [...sizes.entries()]
  .sort((a, b) => b[1] - a[1])
  .slice(0, top)
  .map(([b]) => b);
const groupOf = (id: string): string => {
  const b = firstBlock[Number(id.slice(id.lastIndexOf('-') + 1))];
  return b !== undefined && groups.includes(b) ? `block ${b}` : 'other';
};

console.log(`${file} x${instances} @ ${rps} rps, seed ${seed}, ${requests} requests, whole run`);
for (const spec of flag('--policies', 'e2-plus,cache-aware,kv-cost').split(',')) {
  const { policy, options } = policySpec(spec);
  const { result } = runCell({ ...cell, warmup: 0 }, policy, options);
  const done = result.records.filter((r) => r.finish >= 0);
  const later = routedAfter(result.records);
  const names = [...groups.map((b) => `block ${b}`), 'other'];
  const parts = names.flatMap((name) => {
    const rs = done.filter((r) => groupOf(r.id) === name);
    if (rs.length === 0) return [];
    const perInstance = new Array<number>(instances).fill(0);
    for (const r of rs) perInstance[r.instance]!++;
    const overtakers = rs.map(
      (r) => done.filter((o) => o.instance === r.instance && later(o, r) && o.start < r.start).length,
    );
    const first = rs[0];
    return (
      `${name}: ${rs.length} requests, latency ${mean(rs.map((r) => r.finish - r.arrival)).toFixed(1)} s, ` +
      `TTFT ${mean(rs.map((r) => r.firstToken - r.arrival)).toFixed(1)} s, per instance ${perInstance.join('/')}, ` +
      `overtaken by ${mean(overtakers).toFixed(1)} later arrivals` +
      (first === undefined
        ? ''
        : `; first (${first.id}) waited ${(first.start - first.arrival).toFixed(1)} s`)
    );
  });
  const all = done.map((r) => r.finish - r.arrival);
  console.log(`${spec}: mean ${mean(all).toFixed(2)} s\n  ${parts.join('\n  ')}`);
}
