/**
 * Why e2-plus sorts prompts onto instances by length (sorting study, docs/e2.md step 17): one cell,
 * every e2-plus decision recorded (its cost terms on every instance), then
 *  - per prompt-length bin: how often the chosen instance is not the one with the least prefill queued
 *    ahead (Q), and the mean difference of each cost term between the chosen and that least-Q instance
 *    (which term pays for the longer queue);
 *  - per instance over time: requests decoding and queued, prefill seconds queued, sampled every 60 s;
 *  - predicted (Q at routing) against actual queue wait (arrival to admission), per instance.
 *
 *   node --import tsx scripts/sorting-probe.ts WORKLOAD RPS [--instances N] [--requests N]
 *     [--warmup SECONDS] [--seed S] [--options JSON]
 *
 * The probe wraps the policy's `choose` in this script only: the policy itself is unchanged.
 */
import type { E2PlusInstanceCost } from '../src/core/policies/e2-plus/options.ts';
import { PROMPT_BINS as BINS, cellArgs, mean, onE2PlusDecision, runCell } from './cell-args.ts';

const cell = cellArgs('sorting-probe.ts');
const { workload, rps, instances, warmup, seed, options } = cell;

interface Probe {
  readonly id: string;
  readonly now: number;
  readonly prompt: number;
  readonly chosen: number;
  readonly costs: readonly E2PlusInstanceCost[];
  /** Per instance: decoding, queued (requests), as the policy sees them. */
  readonly decoding: readonly number[];
  readonly queuedCount: readonly number[];
}
const probes: Probe[] = [];
onE2PlusDecision((r, d, now, active, policy) => {
  // biome-ignore lint/suspicious/noExplicitAny: the probe reads the policy's private state
  const states = (policy as any).states as { decoding: Set<unknown>; queue: Set<unknown> }[];
  probes.push({
    id: r.id,
    now,
    prompt: r.tokens.length,
    chosen: d.instance,
    costs: d.costs,
    decoding: active.map((i) => states[i]?.decoding.size ?? 0),
    queuedCount: active.map((i) => states[i]?.queue.size ?? 0),
  });
});

const { report, result } = runCell(cell, 'e2-plus');
const f = (x: number, d = 2) => x.toFixed(d);
console.log(
  `${workload} x${instances} @ ${rps}, seed ${seed}, options ${JSON.stringify(options)}: mean ${f(report.latency.mean)} p99 ${f(report.latency.p99)}`,
);
const byId = new Map(result.records.map((r) => [r.id, r]));
const measured = probes.filter((p) => p.now >= warmup);

// Which term pays for the longer queue: chosen instance against the one with the least Q.
console.log(
  'prompt bin: decisions, chose not-least-Q %, then over those: mean delta (chosen - least-Q) of Q / P / decode / interference / eviction (s), delayed count delta, decoding count delta',
);
for (let b = 0; b + 1 < BINS.length; b++) {
  const bin = measured.filter((p) => p.prompt >= BINS[b]! && p.prompt < BINS[b + 1]!);
  if (bin.length === 0) continue;
  const d = {
    q: [] as number[],
    p: [] as number[],
    dec: [] as number[],
    int: [] as number[],
    ev: [] as number[],
    n: [] as number[],
    D: [] as number[],
  };
  for (const p of bin) {
    let least = 0;
    for (let k = 1; k < p.costs.length; k++) if (p.costs[k]!.queued < p.costs[least]!.queued) least = k;
    const c = p.costs.findIndex((x) => x.instance === p.chosen);
    if (c === least || p.costs[c]!.queued <= p.costs[least]!.queued + 1e-9) continue;
    const a = p.costs[c]!;
    const l = p.costs[least]!;
    d.q.push(a.queued - l.queued);
    d.p.push(a.prefill - l.prefill);
    d.dec.push(a.decode - l.decode);
    d.int.push(a.interference - l.interference);
    d.ev.push(a.eviction - l.eviction);
    d.n.push(a.interference / Math.max(1e-12, a.prefill) - l.interference / Math.max(1e-12, l.prefill));
    d.D.push(p.decoding[c]! + p.queuedCount[c]! - p.decoding[least]! - p.queuedCount[least]!);
  }
  console.log(
    `  ${BINS[b]}-${BINS[b + 1]}: ${bin.length}, ${f((100 * d.q.length) / bin.length, 0)}%, Q ${f(mean(d.q))} P ${f(mean(d.p))} decode ${f(mean(d.dec))} interference ${f(mean(d.int))} eviction ${f(mean(d.ev))}; delayed count ${f(mean(d.n), 1)}; decoding+queued ${f(mean(d.D), 1)}`,
  );
}

// Per instance over time.
console.log(
  'per instance every 60 s (decoding / queued requests / Q prefill seconds queued, as priced for a miss):',
);
let next = warmup;
for (const p of measured) {
  if (p.now < next) continue;
  next += 60;
  const cols = p.costs.map((c, k) => `${p.decoding[k]} / ${p.queuedCount[k]} / ${f(c.queued, 1)}`);
  console.log(`  t=${f(p.now, 0)}: ${cols.join(' | ')}`);
}

// Predicted against actual queue wait per instance.
console.log(
  'per instance: requests, mean prompt, mean Q predicted at routing, mean actual wait (arrival to admission), actual/predicted',
);
for (let i = 0; i < instances; i++) {
  const on = measured.filter((p) => p.chosen === i);
  const pred = on.map((p) => p.costs.find((c) => c.instance === i)!.queued);
  const act = on.map((p) => {
    const r = byId.get(p.id);
    return r === undefined || r.start < 0 ? 0 : r.start - r.arrival;
  });
  console.log(
    `  ${i}: ${on.length}, ${f(mean(on.map((p) => p.prompt)), 0)}, ${f(mean(pred))} s, ${f(mean(act))} s, ${f(mean(act) / Math.max(1e-9, mean(pred)))}`,
  );
}
