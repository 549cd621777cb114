/**
 * What makes up e2-plus's p99 tail in one policies-grid cell (docs/e2.md, measurement log step 13):
 * for each policy, mean / p99 latency and TTFT, and for the requests at or above the p99 latency,
 * where the time went (queued before admission, prefill, decode), their branch, and the in-flight
 * imbalance at their routing (requests on the chosen instance against the least loaded one).
 *
 *   node --import tsx scripts/e2-plus-tail.ts WORKLOAD INSTANCES [--seed S] [--load light|medium|heavy]
 *     [--rps R] [--requests N] [--policies a,b] [--options JSON] [--warmup SECONDS] [--tail]
 *     [--e2e] [--model PRESET] [--ahead]
 *
 * WORKLOAD: any `preble sim --workload` value (a generator, azure:FILE, mooncake:FILE).
 * Without --rps the cell's rate is the grid's (round robin's saturation sweep, src/experiments/policies.ts).
 * --options: e2-plus options for a variant (run as series 'e2-plus*').
 * --e2e: a preble-e2e cell instead (working set scaled with the cluster, 3000 requests by default, its
 * warm-up); --model: the cost-model preset (default mistral-7b-a6000). Also printed, for the requests
 * after the warm-up and for the tail: the prefill of later arrivals that overtook them inside their wait
 * (lpm), e2-plus's predicted queue and prefill at routing, and the prefill that ran beside their decode
 * from requests routed before and after them (docs/e2.md, measurement log steps 14-15). --ahead (slow):
 * the prompt tokens of earlier arrivals that the engine ran before each request although they had fewer
 * cached tokens at routing (e2-plus's lpm prediction put them behind it), and the share of them that ran
 * while part of the request's predicted-cached prefix was still being prefilled by an earlier request.
 */
import { costModelPreset } from '../src/core/cost-model/presets.ts';
import type { Tokens } from '../src/core/types.ts';
import { LOADS, saturationRate } from '../src/experiments/policies.ts';
import { warmupSeconds } from '../src/experiments/warmup.ts';
import type { SimRecord } from '../src/sim/record.ts';
import { runSimulation } from '../src/sim/run.ts';
import { mixed } from '../src/workloads/mixed.ts';
import { workloadStream } from '../src/workloads/request-stream.ts';
import { onE2PlusDecision, routedAfter } from './cell-args.ts';

const args = process.argv.slice(2);
const flag = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i < 0 ? undefined : args[i + 1];
};
const [workload = 'toolbench', instancesArg = '4'] = args.filter(
  (a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--'),
);
const instances = Number(instancesArg);
const seed = Number(flag('--seed') ?? 0);
const e2e = args.includes('--e2e');
const requests = Number(flag('--requests') ?? (e2e ? 3000 : 1500));
const load = LOADS.find((l) => l.name === (flag('--load') ?? 'heavy'));
if (load === undefined) throw new Error('--load must be light, medium or heavy');
const stream = (n: number, rps: number, s: number) =>
  workload === 'mixed'
    ? mixed({ requests: n, rps, seed: s, instances })
    : workloadStream(workload, { requests: n, rps, seed: s, instances })();
const costModel = costModelPreset(flag('--model') ?? 'mistral-7b-a6000');
const rps =
  flag('--rps') !== undefined
    ? Number(flag('--rps'))
    : Math.round(saturationRate(stream, instances, seed, requests, costModel).rps * load.share * 100) / 100;
const policies = (flag('--policies') ?? 'e2-plus,cache-aware').split(',');
const variant = flag('--options');
/** Leave arrivals before this many seconds out of the report's figures (the tail analysis keeps them). */
const warmup = Number(flag('--warmup') ?? (e2e ? warmupSeconds(requests, rps) : 0));
const runs: { name: string; policy: string; options?: Record<string, unknown> }[] = policies.map((p) => ({
  name: p,
  policy: p,
}));
if (variant !== undefined) runs.push({ name: 'e2-plus*', policy: 'e2-plus', options: JSON.parse(variant) });

const pct = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0;
};
const f = (x: number) => x.toFixed(3);

/** e2-plus's predicted queue ahead and own prefill on the chosen instance, by request id. */
const predicted = new Map<string, { queued: number; prefill: number }>();
onE2PlusDecision((r, d) => {
  const c = d.costs.find((x) => x.instance === d.instance);
  if (c !== undefined) predicted.set(r.id, { queued: c.queued, prefill: c.prefill });
});

/**
 * Requests in flight on each instance when `request` was routed: dispatched before it (records are
 * in routing order, so those of the same arrival instant routed first count) and not finished.
 */
function inflightAt(records: readonly SimRecord[], request: SimRecord): number[] {
  const n = new Array<number>(instances).fill(0);
  const t = request.dispatch;
  for (const r of records) {
    if (r === request) break;
    if (r.dispatch <= t && r.finish > t) n[r.instance]!++;
  }
  return n;
}

console.log(`${workload} x${instances} @ ${rps} rps, seed ${seed}, ${requests} requests`);
for (const run of runs) {
  const { report, result } = runSimulation({
    policy: run.policy,
    workload,
    instances,
    rps,
    costModel,
    seed,
    requests: () => stream(requests, rps, seed),
    ...(warmup > 0 ? { warmupSeconds: warmup } : {}),
    ...(run.options === undefined ? {} : { policyOptions: run.options }),
  });
  const recs = result.records.filter((r) => r.finish >= 0);
  const lat = recs.map((r) => r.finish - r.arrival);
  const p99 = pct(lat, 0.99);
  const tail = recs.filter((r) => r.finish - r.arrival >= p99);
  const part = (sel: (r: SimRecord) => number) => f(tail.reduce((s, r) => s + sel(r), 0) / tail.length);
  console.log(
    `${run.name}: mean ${f(report.latency.mean)} p99 ${f(report.latency.p99)} ttft ${f(report.ttft.mean)} / ${f(report.ttft.p99)} hit ${f(report.cacheHitRate)} branches ${JSON.stringify(report.branches)}`,
  );
  console.log(
    `  tail (${tail.length}): queued ${part((r) => r.start - r.arrival)} prefill ${part((r) => r.firstToken - r.start)} decode ${part((r) => r.finish - r.firstToken)} out ${part((r) => r.outputTokens)} prompt ${part((r) => r.promptTokens)} cached ${part((r) => r.cachedTokens)}`,
  );
  const later = routedAfter(recs);
  const overtakes = (r: SimRecord) =>
    recs.filter((o) => o.instance === r.instance && later(o, r) && o.start < r.start).length;
  console.log(`  tail overtaken by later arrivals: ${part(overtakes)} a request`);
  // Where the queue and the decode went: overtaking in the wait, the prediction, prefill beside the decode.
  const byInstance = Array.from({ length: instances }, (_, i) => recs.filter((r) => r.instance === i));
  // Time inside the wait when no prefill ran on the instance (admission held back by memory or slots).
  const prefillIdle = (r: SimRecord) => {
    const spans = byInstance[r.instance]!.filter(
      (o) => o !== r && o.firstToken > r.arrival && o.start < r.start && o.firstToken > o.start,
    )
      .map((o) => [Math.max(o.start, r.arrival), Math.min(o.firstToken, r.start)] as const)
      .sort((a, b) => a[0] - b[0]);
    let busy = 0;
    let end = r.arrival;
    for (const [a, b] of spans) {
      if (b <= end) continue;
      busy += b - Math.max(a, end);
      end = b;
    }
    return r.start - r.arrival - busy;
  };
  /** Prompt tokens other requests on r's instance prefilled inside [from, to], those that arrived after r or before it. */
  const prefilledIn = (r: SimRecord, from: number, to: number, after: boolean) =>
    byInstance[r.instance]!.reduce((s, o) => {
      if (o === r || later(o, r) !== after || o.firstToken <= o.start) return s;
      const span = Math.min(o.firstToken, to) - Math.max(o.start, from);
      return span <= 0 ? s : s + ((o.promptTokens - o.cachedTokens) * span) / (o.firstToken - o.start);
    }, 0);
  const measured = recs.filter((r) => r.arrival >= warmup);
  const tailOf = (sel: SimRecord[]) => {
    const p = pct(
      sel.map((r) => r.finish - r.arrival),
      0.99,
    );
    return sel.filter((r) => r.finish - r.arrival >= p);
  };
  for (const [label, sel] of [
    ['measured', measured],
    ['its tail', tailOf(measured)],
  ] as const) {
    const avg = (g: (r: SimRecord) => number) => f(sel.reduce((s, r) => s + g(r), 0) / sel.length);
    const withPrediction = sel.filter((r) => predicted.has(r.id));
    const pred = (k: 'queued' | 'prefill') =>
      withPrediction.length === 0 || run.policy !== 'e2-plus'
        ? ''
        : ` predicted ${k} ${f(withPrediction.reduce((s, r) => s + predicted.get(r.id)![k], 0) / withPrediction.length)}`;
    console.log(
      `  ${label} (${sel.length}): queued ${avg((r) => r.start - r.arrival)}${pred('queued')}, prefill tokens run in it by earlier arrivals ${avg((r) => prefilledIn(r, r.arrival, r.start, false))} and by later ones (overtakers) ${avg((r) => prefilledIn(r, r.arrival, r.start, true))}, no prefill running ${avg(prefillIdle)}; prefill ${avg((r) => r.firstToken - r.start)}${pred('prefill')}; prefill tokens beside its decode from earlier arrivals ${avg((r) => prefilledIn(r, r.firstToken, r.finish, false))}, later ${avg((r) => prefilledIn(r, r.firstToken, r.finish, true))}`,
    );
  }
  if (args.includes('--ahead')) {
    const tokens = new Map<string, Tokens>();
    for (const q of stream(requests, rps, seed)) tokens.set(q.id, q.tokens);
    const lcp = (a: Tokens, b: Tokens, max: number) => {
      const m = Math.min(a.length, b.length, max);
      let k = 0;
      while (k < m && a[k] === b[k]) k++;
      return k;
    };
    let ahead = 0;
    let behindRanFirst = 0;
    let pending = 0;
    for (const r of measured) {
      const mine = byInstance[r.instance]!;
      for (const o of mine) {
        // Earlier arrivals still waiting when r arrived and admitted before it.
        if (o === r || o.arrival >= r.arrival || o.start <= r.arrival || o.start > r.start) continue;
        const missed = o.promptTokens - o.cachedTokens;
        if (o.predictedCachedTokens >= r.predictedCachedTokens) {
          ahead += missed;
          continue;
        }
        behindRanFirst += missed;
        // Was part of r's predicted-cached prefix being prefilled (by an earlier request) when o started?
        const rt = tokens.get(r.id)!;
        if (
          mine.some(
            (s) =>
              s !== r &&
              s.arrival < r.arrival &&
              s.firstToken > o.start &&
              lcp(rt, tokens.get(s.id)!, r.predictedCachedTokens) > s.predictedCachedTokens,
          )
        )
          pending += missed;
      }
    }
    const n = measured.length;
    console.log(
      `  earlier arrivals run before a request, prompt tokens each: predicted ahead ${Math.round(ahead / n)}, predicted behind ${Math.round(behindRanFirst / n)} (${Math.round((100 * pending) / Math.max(1, behindRanFirst))}% of them while its predicted-cached prefix was still being prefilled)`,
    );
  }
  predicted.clear();
  const all = (sel: (r: SimRecord) => number) => f(recs.reduce((s, r) => s + sel(r), 0) / recs.length);
  console.log(
    `  all: queued ${all((r) => r.start - r.arrival)} prefill ${all((r) => r.firstToken - r.start)} decode ${all((r) => r.finish - r.firstToken)} out ${all((r) => r.outputTokens)}`,
  );
  // The cold start: the first 100 arrivals per instance (count, missed prompt tokens, mean latency).
  const first = result.records.slice(0, 100);
  const per = Array.from({ length: instances }, (_, i) => first.filter((r) => r.instance === i));
  console.log(
    `  first 100: ${per.map((rs) => `${rs.length} req ${rs.reduce((s, r) => s + r.promptTokens - r.cachedTokens, 0)} missed ${rs.reduce((s, r) => s + r.promptTokens, 0)} prompt ${f(rs.reduce((s, r) => s + r.finish - r.arrival, 0) / Math.max(1, rs.length))} s`).join(' | ')}`,
  );
  if (args.includes('--tail'))
    for (const r of tail.sort((a, b) => a.arrival - b.arrival)) {
      const load = inflightAt(recs, r);
      // Requests routed to the same instance after r that the engine admitted before it (lpm overtakes).
      const overtaken = recs.filter(
        (o) => o.instance === r.instance && later(o, r) && o.start < r.start,
      ).length;
      console.log(
        `   ${r.id} i${r.instance} ${r.branch} lat ${f(r.finish - r.arrival)} q ${f(r.start - r.arrival)} pf ${f(r.firstToken - r.start)} dec ${f(r.finish - r.firstToken)} out ${r.outputTokens} prompt ${r.promptTokens} cached ${r.cachedTokens}/${r.predictedCachedTokens} inflight ${load.join(',')} overtaken ${overtaken}`,
      );
    }
}
