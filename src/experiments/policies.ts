import { existsSync } from 'node:fs';
import { costModelPreset } from '../core/cost-model/presets.ts';
import { fixed } from '../report/text-table.ts';
import { runSimulation } from '../sim/run.ts';
import { baseWorkloadNames } from '../workloads/base-workloads.ts';
import { mixed } from '../workloads/mixed.ts';
import { createWorkload } from '../workloads/registry.ts';
import { traceArrivals, traceRequests } from '../workloads/traces/registry.ts';
import { withArrivals } from '../workloads/traces/with-arrivals.ts';
import type { WorkloadRequest } from '../workloads/types.ts';
import { DEFAULT_AZURE_TRACE } from './azure-mixed.ts';
import { DEFAULT_SPLITWISE_TRACES } from './splitwise.ts';
import type { Cell, CellResult, Claim, Experiment, ExperimentOptions } from './types.ts';
import { steadyRequests, WINDOW_SECONDS, warmupSeconds } from './warmup.ts';

/** Our policy, the reproduction, then the anchors it is measured against. */
export const GRID_POLICIES = [
  'e2-plus',
  'e2',
  'cache-aware',
  'kv-cost',
  'prefix-hash',
  'sal',
  'power-of-two',
  'least-load',
  'round-robin',
] as const;
const SUBJECT = 'e2-plus';
const ANCHORS = GRID_POLICIES.filter((p) => p !== SUBJECT);

export const GRID_SIZES = [4, 8] as const;
/** Within this relative difference a comparison counts as even. */
export const EVEN = 0.02;

/**
 * Per-instance rates the round-robin sweep climbs; the first at which round robin's mean latency
 * exceeds twice its latency at the lowest rate is where it saturates ("heavy"); medium and light
 * are a half and a quarter of it. Nothing here depends on a generator's parameters.
 */
export const SWEEP_RATES_PER_INSTANCE = [
  0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 4, 6, 8, 12, 16, 24,
] as const;
export const SATURATION_FACTOR = 2;
/**
 * Each sweep run lasts at least this many seconds of arrivals: at a high rate the grid's requests
 * alone end before a queue can show (conversation on 8 instances never doubled round robin's latency
 * within 1,500 requests up to 192 req/s, twice the rate at which a minute-long run does).
 */
export const SWEEP_MIN_SECONDS = 60;
export const LOADS = [
  { name: 'light', share: 0.25 },
  { name: 'medium', share: 0.5 },
  { name: 'heavy', share: 1 },
] as const;

/** A panel's request stream; working sets scale with `instances` as the authors' generators do. */
type Stream = (requests: number, rps: number, seed: number, instances: number) => Iterable<WorkloadRequest>;

interface Content {
  readonly name: string;
  readonly stream: Stream;
  /** The paper evaluated this workload alone (its Figure 3 setup). */
  readonly paperSetup: boolean;
  /** The most requests the stream has (a trace's rows): a run never asks for more. */
  readonly maxRequests?: number;
}

/**
 * Panels outside issue 11's target (the five workloads, mixed, Azure-timed mixed), by workload name:
 * checks that e2-plus generalises, counted in a claim of their own. `beyondContents` builds exactly
 * these (its names are typed by this list).
 */
const BEYOND_PANELS = ['sharegpt-like', 'conversation', 'azure-conv', 'azure-code', 'mooncake'] as const;
type BeyondPanel = (typeof BEYOND_PANELS)[number];

/** Notes on the last `cells` call's panels (the Azure trace used, or why its panel was left out), for `discuss`. */
const skipped: string[] = [];

function contents(options: ExperimentOptions): Content[] {
  const list: Content[] = baseWorkloadNames.map((w) => ({
    name: w,
    paperSetup: true,
    stream: (requests, rps, seed, instances) => createWorkload(w, { requests, rps, seed, instances }),
  }));
  const mix: Stream = (requests, rps, seed, instances) => mixed({ requests, rps, seed, instances });
  list.push({ name: 'mixed', paperSetup: false, stream: mix });
  const path = options.azureTrace ?? DEFAULT_AZURE_TRACE;
  if (existsSync(path)) {
    skipped.push(
      `mixed@azure: the five workloads re-timed to the arrival pattern of '${path}' (the Azure LLM inference trace, 2023), scaled to each rate`,
    );
    list.push({
      name: 'mixed@azure',
      paperSetup: false,
      stream: (requests, rps, seed, instances) =>
        withArrivals(
          mix(requests, rps, seed, instances),
          traceArrivals({ kind: 'azure', path }, { limit: requests, rps }),
        ),
    });
  } else {
    skipped.push(
      `mixed@azure (the five workloads on the Azure trace's arrival pattern) skipped: '${path}' not found (pass --azure FILE)`,
    );
  }
  return [...list, ...beyondContents(options)];
}

/**
 * Beyond the target: prompts that share nothing (`sharegpt-like`), multi-turn chat (`conversation`:
 * each turn extends the last, after an application's system prompt), and the Azure 2023 production
 * traces replayed whole (their prompt and output lengths and arrival pattern, re-timed to each rate;
 * no prefix sharing is recorded in them).
 */
function beyondContents(options: ExperimentOptions): (Content & { readonly name: BeyondPanel })[] {
  const list: (Content & { readonly name: BeyondPanel })[] = [
    {
      name: 'sharegpt-like',
      paperSetup: false,
      stream: (requests, rps, seed) => createWorkload('sharegpt-like', { requests, rps, seed }),
    },
    {
      name: 'conversation',
      paperSetup: false,
      stream: (requests, rps, seed, instances) =>
        createWorkload('conversation', { requests, rps, seed, instances }),
    },
  ];
  const traces = [
    ['azure-conv', 'azure', options.azureConvTrace ?? DEFAULT_SPLITWISE_TRACES.conv, '--azure-conv'],
    ['azure-code', 'azure', options.azureCodeTrace ?? DEFAULT_SPLITWISE_TRACES.code, '--azure-code'],
    ['mooncake', 'mooncake', options.mooncakeTrace, '--mooncake'],
  ] as const;
  const sources = {
    azure: 'the Azure LLM inference trace 2023',
    mooncake: 'a Mooncake-format trace, prefix-block hashes',
  };
  for (const [name, kind, path, flag] of traces) {
    if (path === undefined || !existsSync(path)) {
      skipped.push(
        path === undefined
          ? `${name} skipped: no trace given (pass ${flag} FILE, e.g. Mooncake's public FAST'25 traces)`
          : `${name} skipped: '${path}' not found (pass ${flag} FILE)`,
      );
      continue;
    }
    const spec = { kind, path } as const;
    // Its row count from the arrivals alone (no prompt tokens drawn).
    const rows = traceArrivals(spec).length;
    skipped.push(
      `${name}: every row of '${path}' (${rows} requests, ${sources[kind]}) in order, re-timed to each rate; a run that would need more requests has only these`,
    );
    list.push({
      name,
      paperSetup: false,
      maxRequests: rows,
      stream: (requests, rps, seed) => traceRequests(spec, { seed, requests, rps }),
    });
  }
  return list;
}

/** Round robin's saturation rate (requests/s for the whole cluster) from a short sweep. */
export function saturationRate(
  stream: Stream,
  instances: number,
  seed: number,
  requests: number,
  costModel = costModelPreset('mistral-7b-a6000'),
): { rps: number; reference: number } {
  let reference = Number.NaN;
  let last = 0;
  for (const per of SWEEP_RATES_PER_INSTANCE) {
    const rps = per * instances;
    last = rps;
    const runRequests = Math.max(requests, Math.ceil(SWEEP_MIN_SECONDS * rps));
    const { report } = runSimulation({
      policy: 'round-robin',
      workload: 'sweep',
      instances,
      rps,
      costModel,
      seed,
      requests: () => stream(runRequests, rps, seed, instances),
    });
    if (Number.isNaN(reference)) reference = report.latency.mean;
    else if (report.latency.mean > SATURATION_FACTOR * reference) return { rps, reference };
  }
  return { rps: last, reference };
}

const round2 = (x: number) => Math.round(x * 100) / 100;

export const policies: Experiment = {
  name: 'policies',
  defaultRequests: 1500,
  showWorkingSet: true,
  title:
    'Global policies grid (issue 11): e2-plus and e2 against the anchors on every workload, mixed and Azure-timed arrivals, three loads, 4 and 8 instances; beyond the target, no sharing, multi-turn chat, the Azure traces and a Mooncake trace if given',
  cells(options: ExperimentOptions): Cell[] {
    skipped.length = 0;
    const costModel = costModelPreset('mistral-7b-a6000');
    const series = GRID_POLICIES.filter((p) => options.only === undefined || options.only.includes(p));
    const cells: Cell[] = [];
    for (const content of contents(options)) {
      for (const instances of GRID_SIZES) {
        const saturation = saturationRate(
          content.stream,
          instances,
          options.seed,
          options.requests,
          costModel,
        ).rps;
        for (const load of LOADS) {
          const rps = round2(saturation * load.share);
          // Long enough for E2's window to fill and stay full (the first window is left out as warm-up),
          // unless a trace runs out of rows first (the report says so).
          const requests = Math.min(
            steadyRequests(options.requests, rps),
            content.maxRequests ?? Number.POSITIVE_INFINITY,
          );
          for (const policy of series) {
            cells.push({
              panel: `${content.name}, ${instances} x Mistral-7B on A6000`,
              series: policy,
              spec: {
                policy,
                workload: content.name,
                instances,
                rps,
                costModel,
                seed: options.seed,
                warmupSeconds: warmupSeconds(requests, rps),
                requests: () => content.stream(requests, rps, options.seed, instances),
              },
            });
          }
        }
      }
    }
    return cells;
  },
  discuss(results: readonly CellResult[]): string {
    const all = compare(results);
    const grid = all.filter((g) => !isBeyond(g.key));
    const beyond = all.filter((g) => isBeyond(g.key));
    const whole = compare(results, 'whole');
    const lines = [
      '## How the grid is built',
      '',
      `Loads per panel: a round-robin sweep (the grid's requests per run or ${SWEEP_MIN_SECONDS} s of arrivals, whichever is more; per-instance rates ${SWEEP_RATES_PER_INSTANCE.join(', ')})`,
      `finds the first rate at which round robin's mean latency exceeds ${SATURATION_FACTOR}x its latency at the lowest rate: that is "heavy";`,
      '"medium" and "light" are a half and a quarter of it. The rates (the columns above) therefore follow the workload',
      "generators as they change. Cost model: Mistral-7B on A6000; engines' queue policy lpm for every policy.",
      "Working sets scale with the cluster as the authors' generators do (each panel states its own against the fleet's KV).",
      ...(skipped.length > 0 ? ['', ...skipped.map((s) => `- ${s}`)] : []),
      '',
      '## e2-plus against each anchor',
      '',
      `Per cell (panel and load) and anchor: the anchor's latency divided by e2-plus's (above 1: e2-plus is faster), mean / p99.`,
      `A cell is won when e2-plus is ahead by more than ${EVEN * 100}% on one of mean and p99 and not behind by more than`,
      `${EVEN * 100}% on the other, lost when it is behind by more than ${EVEN * 100}% on either, even otherwise.`,
      `Each run lasts at least three of E2's windows (${WINDOW_SECONDS} s each: at least the grid's requests, more where the rate`,
      'needs them) and every figure leaves the first window out as warm-up (caches start cold and the window empty); the',
      'last column counts the same cells over every request, the cold start included. The sweep that sets the rates runs',
      `the grid's requests or ${SWEEP_MIN_SECONDS} s of arrivals, whichever is more.`,
      '',
      '| anchor | cells won | even | lost | mean: won / even / lost | p99: won / even / lost | whole run: won / even / lost |',
      '|---|---|---|---|---|---|---|',
    ];
    lines.push(
      ...anchorTable(
        grid,
        whole.filter((g) => !isBeyond(g.key)),
      ),
    );
    if (beyond.length > 0) {
      lines.push(
        '',
        `Beyond the target (${beyondNames(beyond).join(', ')}: no prefix sharing, multi-turn chat, real production lengths and arrivals),`,
        'counted on their own, the same way:',
        '',
        '| anchor | cells won | even | lost | mean: won / even / lost | p99: won / even / lost | whole run: won / even / lost |',
        '|---|---|---|---|---|---|---|',
        ...anchorTable(
          beyond,
          whole.filter((g) => isBeyond(g.key)),
        ),
      );
    }
    lines.push('', `| cell | e2-plus mean / p99 | ${ANCHORS.join(' | ')} |`);
    lines.push(`|---|---|${ANCHORS.map(() => '---').join('|')}|`);
    for (const key of unique(all.map((g) => g.key))) {
      const row = all.filter((g) => g.key === key);
      const s = row[0]!.subject;
      const cols = ANCHORS.map((a) => {
        const g = row.find((x) => x.anchor === a);
        if (g === undefined) return '';
        const mark = g.cell === 'lost' ? ' **L**' : g.cell === 'won' ? ' W' : '';
        return `${fixed(g.meanRatio, 2)} / ${fixed(g.p99Ratio, 2)}${mark}`;
      });
      lines.push(
        `| ${key} | ${fixed(s.report.latency.mean, 2)} / ${fixed(s.report.latency.p99, 2)} | ${cols.join(' | ')} |`,
      );
    }
    const lost = [
      ...all.filter((g) => g.cell === 'lost').map((g) => ({ g, view: 'warm-up left out' })),
      ...whole.filter((g) => g.cell === 'lost').map((g) => ({ g, view: 'whole run' })),
    ];
    lines.push('', '## Where e2-plus loses, and the mechanism measured', '');
    if (lost.length === 0) lines.push('Nowhere in this grid, in either view.');
    else {
      lines.push(
        'Per lost comparison (in either view): cached share of prompt tokens (hit), load spread (max / mean requests',
        'per instance), mean TTFT (queueing before the first token) and mean TPOT (decode), e2-plus against the anchor,',
        'after the warm-up; the mechanism names the largest relative difference among them.',
        '',
        '| cell | anchor | view | mean / p99 ratio | hit | spread | TTFT mean | TPOT mean | mechanism |',
        '|---|---|---|---|---|---|---|---|---|',
      );
      for (const { g, view } of lost) {
        const a = g.other.report;
        const s = g.subject.report;
        const steadyLost = all.some((x) => x.key === g.key && x.anchor === g.anchor && x.cell === 'lost');
        const why =
          view === 'whole run' && !steadyLost
            ? 'the cold start: lost only with the warm-up counted'
            : mechanism(g);
        lines.push(
          `| ${g.key} | ${g.anchor} | ${view} | ${fixed(g.meanRatio, 2)} / ${fixed(g.p99Ratio, 2)} | ${fixed(s.cacheHitRate, 3)} vs ${fixed(a.cacheHitRate, 3)} | ${fixed(spread(g.subject), 2)} vs ${fixed(spread(g.other), 2)} | ${fixed(s.ttft.mean, 2)} vs ${fixed(a.ttft.mean, 2)} | ${fixed(s.tpot.mean, 4)} vs ${fixed(a.tpot.mean, 4)} | ${why} |`,
        );
      }
    }
    lines.push('');
    return lines.join('\n');
  },
  claims(results: readonly CellResult[]): Claim[] {
    const claims: Claim[] = [];
    const all = compare(results);
    const grid = all.filter((g) => !isBeyond(g.key));
    const beyond = all.filter((g) => isBeyond(g.key));
    if (grid.length > 0) {
      const whole = compare(results, 'whole').filter((g) => !isBeyond(g.key));
      claims.push({
        id: 'e2-plus-vs-anchors',
        source: 'issue 11 (ours)',
        statement:
          'e2-plus at or ahead of every anchor on mean and p99 in every cell (the stated warm-up left out)',
        paper: '-',
        measured: tally(grid),
        holds: grid.every((g) => g.cell !== 'lost'),
      });
      claims.push({
        id: 'e2-plus-vs-anchors-whole-run',
        source: 'issue 11 (ours)',
        statement: 'the same over every request of each run, the cold start included',
        paper: '-',
        measured: tally(whole),
        holds: whole.every((g) => g.cell !== 'lost'),
      });
    }
    if (beyond.length > 0) {
      claims.push({
        id: 'e2-plus-vs-anchors-beyond',
        source: 'ours (beyond issue 11)',
        statement: `the same on workloads outside the target (${beyondNames(beyond).join(', ')}), the warm-up left out`,
        paper: '-',
        measured: tally(beyond),
        holds: beyond.every((g) => g.cell !== 'lost'),
      });
    }
    const e2 = results.filter(
      (r) => r.cell.series === 'e2' && paperPanel(r.cell.panel) && loadOf(results, r) !== 'light',
    );
    const ratios = e2.flatMap((r) => {
      const rr = results.find(
        (x) =>
          x.cell.series === 'round-robin' && x.cell.panel === r.cell.panel && x.report.rps === r.report.rps,
      );
      return rr === undefined
        ? []
        : [
            {
              mean: rr.report.latency.mean / r.report.latency.mean,
              p99: rr.report.latency.p99 / r.report.latency.p99,
            },
          ];
    });
    if (ratios.length > 0) {
      const inRange = ratios.filter((x) => x.mean >= 1.5 && x.mean <= 14.5).length;
      const lo = (f: (x: { mean: number; p99: number }) => number) => Math.min(...ratios.map(f));
      const hi = (f: (x: { mean: number; p99: number }) => number) => Math.max(...ratios.map(f));
      claims.push({
        id: 'e2-vs-round-robin',
        source: 'Preble (ICLR 25), Figure 3',
        statement:
          "E2 within the paper's range over round robin where the paper's setup applies (one workload at a time, medium and heavy load)",
        paper: '1.5x-14.5x mean, 2x-10x p99 latency',
        measured: `round robin / e2: ${fixed(
          lo((x) => x.mean),
          2,
        )}x-${fixed(
          hi((x) => x.mean),
          2,
        )}x mean, ${fixed(
          lo((x) => x.p99),
          2,
        )}x-${fixed(
          hi((x) => x.p99),
          2,
        )}x p99; ${inRange} of ${ratios.length} cells within the paper's mean range`,
        holds: inRange === ratios.length,
      });
    }
    return claims;
  },
};

type Verdict = 'won' | 'even' | 'lost';

interface Comparison {
  readonly key: string;
  readonly anchor: string;
  readonly subject: CellResult;
  readonly other: CellResult;
  /** Anchor over e2-plus: above 1, e2-plus is faster. */
  readonly meanRatio: number;
  readonly p99Ratio: number;
  readonly mean: Verdict;
  readonly p99: Verdict;
  readonly cell: Verdict;
}

function verdict(ratio: number): Verdict {
  if (ratio > 1 + EVEN) return 'won';
  if (ratio < 1 - EVEN) return 'lost';
  return 'even';
}

/**
 * Which latency a comparison reads: `steady` leaves the stated warm-up out (the grid's headline, like
 * every Preble experiment); `whole` counts every request, the cold start included.
 */
type View = 'steady' | 'whole';

function latencyOf(r: CellResult, view: View) {
  return view === 'whole' ? (r.report.warmup?.wholeRunLatency ?? r.report.latency) : r.report.latency;
}

function compare(results: readonly CellResult[], view: View = 'steady'): Comparison[] {
  const out: Comparison[] = [];
  for (const s of results.filter((r) => r.cell.series === SUBJECT)) {
    const key = `${s.cell.panel} @ ${s.report.rps} rps (${loadOf(results, s)})`;
    for (const anchor of ANCHORS) {
      const other = results.find(
        (r) => r.cell.series === anchor && r.cell.panel === s.cell.panel && r.report.rps === s.report.rps,
      );
      if (other === undefined) continue;
      const meanRatio = latencyOf(other, view).mean / latencyOf(s, view).mean;
      const p99Ratio = latencyOf(other, view).p99 / latencyOf(s, view).p99;
      const mean = verdict(meanRatio);
      const p99 = verdict(p99Ratio);
      const cell: Verdict =
        mean === 'lost' || p99 === 'lost' ? 'lost' : mean === 'won' || p99 === 'won' ? 'won' : 'even';
      out.push({ key, anchor, subject: s, other, meanRatio, p99Ratio, mean, p99, cell });
    }
  }
  return out;
}

/** The workload a panel (or a comparison's key) runs: its name before the first comma. */
function panelWorkload(panelOrKey: string): string {
  return panelOrKey.split(',')[0]!;
}

/** The beyond-target workloads these comparisons ran, in `BEYOND_PANELS` order (a skipped trace is not one). */
function beyondNames(beyond: readonly { readonly key: string }[]): string[] {
  const ran = new Set(beyond.map((g) => panelWorkload(g.key)));
  return BEYOND_PANELS.filter((name) => ran.has(name));
}

/** A panel outside issue 11's target (`BEYOND_PANELS`). */
function isBeyond(panelOrKey: string): boolean {
  return (BEYOND_PANELS as readonly string[]).includes(panelWorkload(panelOrKey));
}

/** One row per anchor: cells won / even / lost, by mean and by p99, and over the whole run. */
function anchorTable(grid: readonly Comparison[], whole: readonly Comparison[]): string[] {
  const lines: string[] = [];
  for (const a of ANCHORS) {
    const rows = grid.filter((g) => g.anchor === a);
    if (rows.length === 0) continue;
    const n = (f: (g: Comparison) => boolean) => rows.filter(f).length;
    const w = (v: Verdict) => whole.filter((g) => g.anchor === a && g.cell === v).length;
    lines.push(
      `| ${a} | ${n((g) => g.cell === 'won')} | ${n((g) => g.cell === 'even')} | ${n((g) => g.cell === 'lost')} | ${n((g) => g.mean === 'won')} / ${n((g) => g.mean === 'even')} / ${n((g) => g.mean === 'lost')} | ${n((g) => g.p99 === 'won')} / ${n((g) => g.p99 === 'even')} / ${n((g) => g.p99 === 'lost')} | ${w('won')} / ${w('even')} / ${w('lost')} |`,
    );
  }
  return lines;
}

/** Won / even / lost per anchor, over the whole grid, as a claims line. */
function tally(grid: readonly Comparison[]): string {
  const count = (v: Verdict) => grid.filter((g) => g.cell === v).length;
  const cells = unique(grid.map((g) => g.key)).length;
  const perAnchor = ANCHORS.map((a) => {
    const rows = grid.filter((g) => g.anchor === a);
    return `${a} ${rows.filter((g) => g.cell === 'won').length}/${rows.filter((g) => g.cell === 'even').length}/${rows.filter((g) => g.cell === 'lost').length}`;
  }).join(', ');
  return `${cells} cells x ${ANCHORS.length} anchors: won ${count('won')}, even ${count('even')}, lost ${count('lost')} (won/even/lost per anchor: ${perAnchor})`;
}

/** The load name of a result's rate within its panel (rates sorted: light, medium, heavy). */
function loadOf(results: readonly CellResult[], r: CellResult): string {
  const rates = unique(results.filter((x) => x.cell.panel === r.cell.panel).map((x) => x.report.rps)).sort(
    (a, b) => a - b,
  );
  return LOADS[rates.indexOf(r.report.rps)]?.name ?? `${r.report.rps} rps`;
}

function paperPanel(panel: string): boolean {
  return (baseWorkloadNames as readonly string[]).includes(panelWorkload(panel));
}

/** Max over mean requests per instance. */
function spread(r: CellResult): number {
  const n = r.report.perInstance.map((i) => i.requests);
  const mean = n.reduce((a, b) => a + b, 0) / n.length;
  return mean > 0 ? Math.max(...n) / mean : 1;
}

/** The measured difference that best explains a loss: the largest relative gap in e2-plus's disfavour. */
function mechanism(g: Comparison): string {
  const s = g.subject.report;
  const a = g.other.report;
  const gaps: [string, number][] = [
    [
      'fewer cache hits (prefixes recomputed)',
      (a.cacheHitRate - s.cacheHitRate) / Math.max(0.05, a.cacheHitRate),
    ],
    ['load concentration (requests per instance)', (spread(g.subject) - spread(g.other)) / spread(g.other)],
    ['queueing before the first token', (s.ttft.mean - a.ttft.mean) / Math.max(1e-9, a.ttft.mean)],
    ['slower decode (bigger batches)', (s.tpot.mean - a.tpot.mean) / Math.max(1e-9, a.tpot.mean)],
  ];
  gaps.sort((x, y) => y[1] - x[1]);
  const [name, gap] = gaps[0]!;
  return gap > 0.02 ? `${name} (+${fixed(gap * 100, 0)}%)` : 'no single mechanism above 2% (p99 noise)';
}

function unique<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}
