import { GPU_SHAPES } from '../core/cost-model/gpu-shapes.ts';
import type { InstanceCostModel } from '../core/cost-model/instance.ts';
import { MODEL_SHAPES } from '../core/cost-model/model-shapes.ts';
import { rooflineCostModel } from '../core/cost-model/roofline.ts';
import { isGlobalPolicyName } from '../core/policies/registry.ts';
import { isQueuePolicyName } from '../core/replica-queue/registry.ts';
import { fixed } from '../report/text-table.ts';
import { traceRequests } from '../workloads/traces/registry.ts';
import type { WorkloadRequest } from '../workloads/types.ts';
import { saturationRate } from './policies.ts';
import {
  type LengthSource,
  lengthSource,
  sourceLabel,
  splitwiseRequests,
  type TraceName,
} from './splitwise.ts';
import type { Cell, CellResult, Claim, Experiment, ExperimentOptions } from './types.ts';

const GIB = 2 ** 30;

/**
 * Seed 002's two servers, on the roofline: Llama-3 8B on one A100 with 40 GB (our GPU list has the
 * 80 GB A100; the 40 GB one differs only in memory) and Llama-3 70B with FP8 weights (1 byte per
 * parameter) on 2 x H100, tensor-parallel. FP8 halves the weights' bytes; the roofline keeps the bf16
 * tensor peak for compute (a conservative reading: W8A8 kernels may run faster).
 */
export const SCHEDULER_SETUPS = [
  {
    id: '8b-a100',
    title: 'Llama-3 8B on A100-40G',
    servers: 8,
    costModel: (): InstanceCostModel =>
      rooflineCostModel({
        name: 'roofline:llama3-8b@a100-40g',
        model: MODEL_SHAPES['llama3-8b'],
        gpu: { ...GPU_SHAPES['a100-80g'], name: 'a100-40g', memoryBytes: 40 * GIB },
        gpuCount: 1,
      }),
  },
  {
    id: '70b-h100x2',
    title: 'Llama-3 70B FP8 on 2 x H100',
    servers: 4,
    costModel: (): InstanceCostModel =>
      rooflineCostModel({
        name: 'roofline:llama3-70b-fp8@h100x2',
        model: { ...MODEL_SHAPES['llama3-70b'], name: 'llama3-70b-fp8', bytesPerParam: 1 },
        gpu: GPU_SHAPES['h100-80g'],
        gpuCount: 2,
      }),
  },
] as const;

/** One series: a global policy (round robin on one server) and the engines' queue policy, with a predictor. */
interface Series {
  readonly name: string;
  readonly policy: string;
  readonly queuePolicy: string;
  readonly predictor?: string;
  /**
   * Give each engine a host KV pool of this many times its GPU KV capacity (swap instead of recompute).
   * FastServe's design swaps preempted KV to host memory; a host holds far more RAM than its GPUs'
   * KV, so 1x is a modest pool, our assumption.
   */
  readonly hostKvShare?: number;
}

/** Seed 002's single-server comparison (Figures 8): engine-level schedulers on one server. */
export const SINGLE_SERIES: readonly Series[] = [
  { name: 'fcfs', policy: 'round-robin', queuePolicy: 'fcfs' },
  { name: 'no-preempt', policy: 'round-robin', queuePolicy: 'no-preempt' },
  // TRAIL+: TRAIL given the exact output lengths (seed 002's upper bound).
  { name: 'trail+', policy: 'round-robin', queuePolicy: 'trail', predictor: 'oracle' },
  { name: 'ltr', policy: 'round-robin', queuePolicy: 'ltr', predictor: 'rank-oracle' },
  { name: 'larry', policy: 'round-robin', queuePolicy: 'larry' },
  // Beyond seed 002 (mechanism): TRAIL and S3 with a realistic predictor, TetriInfer's 200-token
  // classifier at its measured 74.9%, instead of the exact lengths.
  { name: 'trail@tetri200', policy: 'round-robin', queuePolicy: 'trail', predictor: 'tetriinfer-200' },
  { name: 's3@tetri200', policy: 'round-robin', queuePolicy: 's3', predictor: 'tetriinfer-200' },
  // Preempted KV swapped to a host pool as large as the GPU's KV (FastServe's proactive swapping, unmodelled
  // overlap aside: docs/fleets.md).
  { name: 'fastserve', policy: 'round-robin', queuePolicy: 'fastserve', hostKvShare: 1 },
];

/** Seed 002's multi-server comparison (Figures 11): load balancers with LARRY, and our prefix-aware policies. */
export const MULTI_SERIES: readonly Series[] = [
  { name: 'sal+larry', policy: 'sal', queuePolicy: 'larry' },
  { name: 'power-of-two+larry', policy: 'power-of-two', queuePolicy: 'larry' },
  { name: 'random+larry', policy: 'random', queuePolicy: 'larry' },
  { name: 'llumnix+larry', policy: 'llumnix', queuePolicy: 'larry' },
  // The engine scheduler's share against the balancer's: the same balancer with vLLM's default.
  { name: 'random+fcfs', policy: 'random', queuePolicy: 'fcfs' },
  { name: 'e2+larry', policy: 'e2', queuePolicy: 'larry' },
  { name: 'e2-plus+larry', policy: 'e2-plus', queuePolicy: 'larry' },
  { name: 'cache-aware+larry', policy: 'cache-aware', queuePolicy: 'larry' },
];

/**
 * Load scales: multiples of round robin's saturation rate on the setup (policies.ts's sweep), up to
 * twice it: seed 002's x-axis runs into overload (FCFS's TTFT climbing), where the waiting queue is
 * long enough for an engine scheduler's order to matter.
 */
export const SCHEDULER_SCALES = [0.5, 1, 1.5, 2] as const;
const TRACES: readonly TraceName[] = ['conv', 'code'];
const TRACE_LABEL: Readonly<Record<TraceName, string>> = { conv: 'SW-Chat', code: 'SW-Code' };

/** What the last `cells` call ran on, for `discuss`. */
const notes: string[] = [];

const available = (s: Series) => isGlobalPolicyName(s.policy) && isQueuePolicyName(s.queuePolicy);

/**
 * The trace's rows in order with their own arrival pattern re-timed linearly to a mean of `rps` (seed
 * 002 scales the recorded QPS linearly); the stand-in (lognormal lengths, Poisson arrivals) without it.
 */
function stream(
  source: LengthSource,
  requests: number,
  rps: number,
  seed: number,
): Iterable<WorkloadRequest> {
  if (source.path === undefined) return splitwiseRequests(source, { requests, rps, seed });
  return traceRequests({ kind: 'azure', path: source.path }, { seed, requests, rps });
}

const panelOf = (setup: string, servers: number, trace: TraceName) =>
  `${TRACE_LABEL[trace]}, ${servers === 1 ? '1 server' : `${servers} servers`} x ${setup}`;

export const schedulers: Experiment = {
  name: 'schedulers',
  defaultRequests: 400,
  title:
    'Engine schedulers and load balancers of seed 002 (issue 15): FCFS, No-Preempt, TRAIL+, LTR, LARRY on one server; SAL, P2C, Random with LARRY on several; Azure 2023 chat and code traces',
  cells(options: ExperimentOptions): Cell[] {
    notes.length = 0;
    const cells: Cell[] = [];
    for (const s of [...SINGLE_SERIES, ...MULTI_SERIES]) {
      if (!available(s))
        notes.push(
          `${s.name}: not run (no ${isGlobalPolicyName(s.policy) ? 'queue' : 'global'} policy '${isGlobalPolicyName(s.policy) ? s.queuePolicy : s.policy}' in this build)`,
        );
    }
    for (const trace of TRACES) {
      const source = lengthSource(trace, trace === 'code' ? options.azureCodeTrace : options.azureConvTrace);
      notes.push(`${TRACE_LABEL[trace]}: ${sourceLabel(source)}`);
      for (const setup of SCHEDULER_SETUPS) {
        const costModel = setup.costModel();
        for (const [servers, list] of [
          [1, SINGLE_SERIES],
          [setup.servers, MULTI_SERIES],
        ] as const) {
          // Multi-server runs get the requests per server of the single-server runs' share, at least as many.
          const requests = servers === 1 ? options.requests : options.requests * 2;
          const make = (n: number, rps: number, seed: number) => stream(source, n, rps, seed);
          const saturation = saturationRate(make, servers, options.seed, requests, costModel).rps;
          const panel = panelOf(setup.title, servers, trace);
          notes.push(`${panel}: round robin saturates at ${saturation} rps`);
          for (const scale of SCHEDULER_SCALES) {
            const rps = Math.round(saturation * scale * 100) / 100;
            for (const s of list) {
              if (!available(s)) continue;
              if (options.only !== undefined && !options.only.includes(s.name)) continue;
              cells.push({
                panel,
                series: s.name,
                spec: {
                  policy: s.policy,
                  workload: `${trace}`,
                  instances: servers,
                  rps,
                  costModel,
                  seed: options.seed,
                  queuePolicy: s.queuePolicy as never,
                  ...(s.predictor === undefined ? {} : { predictor: s.predictor }),
                  ...(s.hostKvShare === undefined
                    ? {}
                    : { hostKvTokens: Math.floor(costModel.kvCapacityTokens * s.hostKvShare) }),
                  requests: () => stream(source, requests, rps, options.seed),
                },
              });
            }
          }
        }
      }
    }
    return cells;
  },
  discuss(results: readonly CellResult[]): string {
    const lines = [
      '## Setup',
      '',
      `Load scales: ${SCHEDULER_SCALES.join(', ')} x the rate at which round robin's mean latency (lpm engines) doubles its`,
      "low-load value (policies.ts's sweep), per panel; seed 002 scaled the recorded QPS linearly in the same way. Lengths",
      "and arrival pattern: the Azure 2023 trace's first rows in order, re-timed linearly to each rate (a stand-in with",
      'lognormal lengths and Poisson arrivals where the file is absent). Cost models: the roofline (see `SCHEDULER_SETUPS`).',
      'Predictors: TRAIL+ reads the exact output length (`oracle`); LTR ranks with `rank-oracle` (Kendall tau 0.6);',
      "`trail@tetri200` and `s3@tetri200` (not in seed 002) use TetriInfer's 200-token classifier at its measured 74.9%",
      '(`tetriinfer-200`: the point is the bucket middle, re-predicted one bucket up when outrun).',
      'The azure traces share no prefixes, so e2, e2-plus and cache-aware act as load balancers only here.',
      '',
      ...notes.map((n) => `- ${n}`),
      '',
      '## p95 TTFT and latency (seconds), per panel and scale',
      '',
      '| panel | series | ' +
        SCHEDULER_SCALES.map((s) => `x${s}: p50 / p95 TTFT, p50 / p95 latency`).join(' | ') +
        ' |',
      `|---|---|${SCHEDULER_SCALES.map(() => '---').join('|')}|`,
    ];
    for (const panel of unique(results.map((r) => r.cell.panel))) {
      const inPanel = results.filter((r) => r.cell.panel === panel);
      const rates = unique(inPanel.map((r) => r.report.rps)).sort((a, b) => a - b);
      for (const series of unique(inPanel.map((r) => r.cell.series))) {
        const cols = rates.map((rate) => {
          const r = inPanel.find((c) => c.cell.series === series && c.report.rps === rate);
          if (r === undefined) return '';
          return `${fixed(r.report.ttft.p50, 2)} / ${fixed(r.p95?.ttft ?? Number.NaN, 2)}, ${fixed(r.report.latency.p50, 1)} / ${fixed(r.p95?.latency ?? Number.NaN, 1)}`;
        });
        lines.push(`| ${panel} | ${series} | ${cols.join(' | ')} |`);
      }
    }
    lines.push('', ...mechanism(results), '', '## Claims', '');
    const claims = schedulerClaims(results);
    for (const c of claims) {
      lines.push(
        `- **${c.id}** (${c.holds ? 'holds' : 'does not hold'}): ${c.statement} Paper: ${c.paper} Measured: ${c.measured}`,
      );
    }
    const failing = claims.filter((c) => !c.holds && WHY_NOT[c.id] !== undefined);
    if (failing.length > 0) {
      lines.push('', '## What does not hold, and why', '');
      for (const c of failing) lines.push(`- **${c.id}**: ${WHY_NOT[c.id]}`);
    }
    return lines.join('\n');
  },
  claims: (results) => schedulerClaims(results),
};

/** Explanations of claims that do not hold, from the mechanism table (shown only when one fails). */
const WHY_NOT: Readonly<Record<string, string>> = {
  'larry-p50-ttft':
    "LARRY runs within a few per cent of FCFS here (the fcfs/larry ratios of larry-p50-over-p95). Its reordering acts through the memory term, and the mechanism table shows why that term is weak: a mean prompt outweighs one second of waiting only behind as many waiting requests as its 'queue for 1 s' column says (tens to hundreds), and memory ran out rarely or never (preemptions). The roofline servers' KV (the table's capacity column) is large against these traces' prompts, so the head of the queue is seldom blocked by memory; the queueing left is compute queueing, where only an order by output length (TRAIL+, with exact lengths: SRPT) cuts the median. Seed 002 measured vLLM on real GPUs (its alpha is lost in our copy of the text, and its driver's back-pressure, which it describes, is not modelled here).",
  'larry-least-sensitive':
    "Same mechanism as larry-p50-ttft: LARRY's p50 follows FCFS's into overload, while TRAIL+, which orders by the exact output length, keeps the median low (and pays at p95); LTR's ranker (tau 0.6) helps only below the highest scale.",
  'sal-chat':
    'SAL and the best of P2C and Random are within about 1% of each other at the highest scale in the chat panels, so the strict comparison flips on noise. SAL weighs queued prefill tokens and free memory; with memory seldom binding (see the mechanism table) its signal is close to the queued-work signal P2C samples.',
  'engine-over-balancer':
    'The engine-side comparison here is FCFS against LARRY under Random, and LARRY is close to FCFS in this setup (larry-p50-ttft), so the engine choice moves little; the balancers differ most on the bursty code trace. The paper compared all of its engine schedulers, including No-Preempt, whose TTFT left its plots.',
};

/**
 * Why LARRY stays close to FCFS here, measured: its memory term is |Q| x (uncached prompt / KV
 * capacity) against alpha = 1 per second waited, so a prompt outweighs one second of waiting only
 * behind capacity / prompt waiting requests. And how often memory ran out at all (preemptions).
 */
function mechanism(results: readonly CellResult[]): string[] {
  const lines = [
    '## Mechanism: memory pressure and LARRY',
    '',
    "LARRY's score is alpha x wait - |Q| x uncached / KV capacity (alpha 1). Per single-server panel: the KV capacity, the",
    "mean prompt of the panel's stream, the queue length at which a mean prompt's memory term equals one second of waiting",
    '(capacity / mean prompt), and the preemptions each series caused at the highest scale (memory running out).',
    '',
    '| panel | KV capacity (tokens) | mean prompt | queue for 1 s | preemptions at the highest scale |',
    '|---|---|---|---|---|',
  ];
  for (const panel of singlePanels(results)) {
    const inPanel = results.filter((r) => r.cell.panel === panel);
    const first = inPanel[0]!;
    let prompt = 0;
    let n = 0;
    for (const r of first.cell.spec.requests()) {
      prompt += r.tokens.length;
      n++;
    }
    const capacity = first.cell.spec.costModel.kvCapacityTokens;
    const mean = n === 0 ? 0 : prompt / n;
    const preemptions = unique(inPanel.map((r) => r.cell.series))
      .map((s) => `${s} ${atRate(results, panel, s, 'high')?.preemptions ?? 0}`)
      .join(', ');
    lines.push(
      `| ${panel} | ${capacity} | ${fixed(mean, 0)} | ${fixed(capacity / Math.max(mean, 1), 0)} | ${preemptions} |`,
    );
  }
  lines.push(
    '',
    "What a realistic predictor keeps of TRAIL+'s median gain: p50 TTFT at the highest scale of FCFS, TRAIL+ (exact lengths) and",
    "TRAIL with TetriInfer's 200-token classifier (74.9%), and the share of FCFS-to-TRAIL+ gain the classifier keeps; p95 alongside.",
    '',
    '| panel | fcfs p50 / p95 | trail+ p50 / p95 | trail@tetri200 p50 / p95 | gain kept |',
    '|---|---|---|---|---|',
  );
  for (const panel of singlePanels(results)) {
    const [f, t, p] = ['fcfs', 'trail+', 'trail@tetri200'].map((s) => atRate(results, panel, s, 'high'));
    if (f === undefined || t === undefined || p === undefined) continue;
    const both = (r: CellResult) => `${fixed(r.report.ttft.p50, 2)} / ${fixed(r.p95?.ttft ?? Number.NaN, 2)}`;
    const gain = f.report.ttft.p50 - t.report.ttft.p50;
    const kept =
      gain > 0 ? `${fixed((100 * (f.report.ttft.p50 - p.report.ttft.p50)) / gain, 0)}%` : 'no gain';
    lines.push(`| ${panel} | ${both(f)} | ${both(t)} | ${both(p)} | ${kept} |`);
  }
  return lines;
}

function unique<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}

/** Per panel, the series' result at the panel's highest and lowest rate. */
function atRate(results: readonly CellResult[], panel: string, series: string, which: 'low' | 'high') {
  const inPanel = results.filter((r) => r.cell.panel === panel && r.cell.series === series);
  if (inPanel.length === 0) return undefined;
  const sorted = [...inPanel].sort((a, b) => a.report.rps - b.report.rps);
  return which === 'high' ? sorted[sorted.length - 1] : sorted[0];
}

const singlePanels = (results: readonly CellResult[]) =>
  unique(results.map((r) => r.cell.panel)).filter((p) => p.includes(', 1 server'));
const multiPanels = (results: readonly CellResult[]) =>
  unique(results.map((r) => r.cell.panel)).filter((p) => !p.includes(', 1 server'));

/** A comparison over panels: each panel's verdict and the numbers behind it. */
function over(
  panels: readonly string[],
  verdict: (panel: string) => { ok: boolean; text: string } | undefined,
): { holds: boolean; measured: string } {
  const rows = panels.map((p) => ({ panel: p, v: verdict(p) })).filter((x) => x.v !== undefined);
  const ok = rows.filter((x) => x.v!.ok).length;
  return {
    holds: rows.length > 0 && ok === rows.length,
    measured: `${ok} of ${rows.length} panels at the highest scale: ${rows.map((x) => `${x.panel}: ${x.v!.text}`).join('; ')}`,
  };
}

const SOURCE = 'Seed 002 (LARRY and SAL), Section 6';

function schedulerClaims(results: readonly CellResult[]): Claim[] {
  const single = singlePanels(results);
  const multi = multiPanels(results);
  const ttft50 = (panel: string, series: string) => atRate(results, panel, series, 'high')?.report.ttft.p50;
  const ttft95 = (panel: string, series: string) => atRate(results, panel, series, 'high')?.p95?.ttft;
  const claims: Claim[] = [];

  const larryP50 = over(single, (p) => {
    const l = ttft50(p, 'larry');
    const others = ['fcfs', 'trail+', 'ltr', 'no-preempt'].map((s) => [s, ttft50(p, s)] as const);
    if (l === undefined) return undefined;
    const best = Math.min(...others.map(([, v]) => v ?? Number.POSITIVE_INFINITY));
    return { ok: l <= best, text: `larry ${fixed(l, 2)} s, best other ${fixed(best, 2)} s` };
  });
  claims.push({
    id: 'larry-p50-ttft',
    source: `${SOURCE}, Figures 8 (single server)`,
    statement:
      "LARRY's p50 TTFT is the lowest of the engine schedulers under load (it avoids head-of-line blocking).",
    paper: 'LARRY lowest p50 TTFT on both traces and both servers; TRAIL+ and FCFS similar.',
    ...larryP50,
  });

  const p50Gain = over(single, (p) => {
    const [l50, f50, l95, f95] = [
      ttft50(p, 'larry'),
      ttft50(p, 'fcfs'),
      ttft95(p, 'larry'),
      ttft95(p, 'fcfs'),
    ];
    if (l50 === undefined || f50 === undefined || l95 === undefined || f95 === undefined) return undefined;
    const g50 = f50 / Math.max(l50, 1e-9);
    const g95 = f95 / Math.max(l95, 1e-9);
    return { ok: g50 > g95, text: `fcfs/larry p50 ${fixed(g50, 2)}x, p95 ${fixed(g95, 2)}x` };
  });
  claims.push({
    id: 'larry-p50-over-p95',
    source: `${SOURCE}, Figures 8`,
    statement: "LARRY's TTFT gain over FCFS is larger at p50 than at p95 (it deprioritises large prompts).",
    paper: 'Benefits more pronounced at p50 than p95.',
    ...p50Gain,
  });

  const trailP50 = over(single, (p) => {
    const [t, f] = [ttft50(p, 'trail+'), ttft50(p, 'fcfs')];
    if (t === undefined || f === undefined) return undefined;
    return { ok: t <= f, text: `trail+ ${fixed(t, 2)} s, fcfs ${fixed(f, 2)} s` };
  });
  claims.push({
    id: 'trail-p50-ttft',
    source: `${SOURCE}, Figures 8`,
    statement:
      'TRAIL+ reaches a p50 TTFT at or below FCFS at high scales (output and input lengths are slightly correlated).',
    paper: 'TRAIL+ also achieves low p50 TTFTs at higher scaling factors.',
    ...trailP50,
  });

  const trailTail = over(single, (p) => {
    const [t, l] = [ttft95(p, 'trail+'), ttft95(p, 'larry')];
    if (t === undefined || l === undefined) return undefined;
    return { ok: t >= l, text: `trail+ p95 ${fixed(t, 2)} s, larry p95 ${fixed(l, 2)} s` };
  });
  claims.push({
    id: 'trail-p95-ttft',
    source: `${SOURCE}, Figures 8`,
    statement: "TRAIL+'s p95 TTFT is no better than LARRY's (it has no starvation guard).",
    paper:
      'TRAIL+ benefits are not as pronounced at p95; some deployments showed starvation of large requests.',
    ...trailTail,
  });

  const chat = single.filter((p) => p.startsWith(TRACE_LABEL.conv));
  const noPreempt = over(chat, (p) => {
    const code = p.replace(TRACE_LABEL.conv, TRACE_LABEL.code);
    const [nc, fc, nk, fk] = [
      ttft50(p, 'no-preempt'),
      ttft50(p, 'fcfs'),
      ttft50(code, 'no-preempt'),
      ttft50(code, 'fcfs'),
    ];
    if (nc === undefined || fc === undefined || nk === undefined || fk === undefined) return undefined;
    const chatRatio = nc / Math.max(fc, 1e-9);
    const codeRatio = nk / Math.max(fk, 1e-9);
    return {
      ok: chatRatio > codeRatio,
      text: `no-preempt/fcfs p50 TTFT: chat ${fixed(chatRatio, 2)}x, code ${fixed(codeRatio, 2)}x`,
    };
  });
  claims.push({
    id: 'no-preempt-chat',
    source: `${SOURCE}, Figures 8`,
    statement:
      'No-Preempt suffers more on SW-Chat than on SW-Code (reserving whole outputs limits concurrency; code is prefill-dominated).',
    paper: 'No-Preempt beyond the plot limits on SW-Chat; significantly better on SW-Code.',
    ...noPreempt,
  });

  const sensitivity = over(single, (p) => {
    const ratio = (s: string) => {
      const lo = atRate(results, p, s, 'low')?.report.ttft.p50;
      const hi = atRate(results, p, s, 'high')?.report.ttft.p50;
      return lo === undefined || hi === undefined ? undefined : hi / Math.max(lo, 1e-9);
    };
    const l = ratio('larry');
    if (l === undefined) return undefined;
    const others = ['fcfs', 'trail+', 'ltr'].map((s) => ratio(s) ?? Number.POSITIVE_INFINITY);
    return {
      ok: l <= Math.min(...others),
      text: `larry x${fixed(l, 2)}, least other x${fixed(Math.min(...others), 2)}`,
    };
  });
  claims.push({
    id: 'larry-least-sensitive',
    source: `${SOURCE}, Figures 8`,
    statement: "LARRY's p50 TTFT grows least from the lowest to the highest load scale.",
    paper: 'LARRY was least sensitive to scaling the QPS up.',
    ...sensitivity,
  });

  const sal = over(
    multi.filter((p) => p.startsWith(TRACE_LABEL.conv)),
    (p) => {
      const s = ttft50(p, 'sal+larry');
      const others = ['power-of-two+larry', 'random+larry'].map((x) => ttft50(p, x));
      if (s === undefined || others.some((x) => x === undefined)) return undefined;
      const best = Math.min(...(others as number[]));
      return { ok: s <= best, text: `sal ${fixed(s, 2)} s, best of p2c/random ${fixed(best, 2)} s` };
    },
  );
  claims.push({
    id: 'sal-chat',
    source: `${SOURCE}, Figures 11 (multi-server)`,
    statement: 'With LARRY on every server, SAL gives the lowest p50 TTFT of SAL, P2C and Random on SW-Chat.',
    paper: 'SAL improves on the other balancers except SW-Code (all similar) and Random on H100 (similar).',
    ...sal,
  });

  const engineShare = over(multi, (p) => {
    const [fcfs, larry] = [ttft50(p, 'random+fcfs'), ttft50(p, 'random+larry')];
    const balancers = ['sal+larry', 'power-of-two+larry', 'random+larry'].map((x) => ttft50(p, x));
    if (fcfs === undefined || larry === undefined || balancers.some((x) => x === undefined)) return undefined;
    const engine = Math.abs(fcfs - larry);
    const lb = Math.max(...(balancers as number[])) - Math.min(...(balancers as number[]));
    return {
      ok: engine >= lb,
      text: `fcfs vs larry ${fixed(engine, 2)} s apart, balancers ${fixed(lb, 2)} s apart`,
    };
  });
  claims.push({
    id: 'engine-over-balancer',
    source: `${SOURCE}, Figures 11`,
    statement: 'The engine-level scheduler moves p50 TTFT more than the choice of load balancer.',
    paper: 'Engine-level scheduling can have a larger impact on serving capacity than the load balancer.',
    ...engineShare,
  });
  return claims;
}
