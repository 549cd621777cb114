import { existsSync } from 'node:fs';
import { costModelPreset } from '../core/cost-model/presets.ts';
import type { Fleet } from '../core/fleet/fleet.ts';
import { percentiles } from '../report/stats.ts';
import { fixed } from '../report/text-table.ts';
import { fleetRun, runSimulation, type SimSpec } from '../sim/run.ts';
import { baseWorkloadNames } from '../workloads/base-workloads.ts';
import { mixed } from '../workloads/mixed.ts';
import { createWorkload } from '../workloads/registry.ts';
import { traceArrivals, traceRequests } from '../workloads/traces/registry.ts';
import { withArrivals } from '../workloads/traces/with-arrivals.ts';
import type { WorkloadRequest } from '../workloads/types.ts';
import { DEFAULT_AZURE_TRACE } from './azure-mixed.ts';
import { e2Cells, e2VsRoundRobinClaim, e2VsRoundRobinLines } from './e2-vs-round-robin.ts';
import { oncePerRun } from './once-per-run.ts';
import { comparePaired, EVEN, type Standing, standingOf } from './paired-comparison.ts';
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
export { EVEN };

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
  /**
   * A trace replayed row by row: every seed gives the same lengths and arrivals (only the prompts'
   * token ids differ), so its cells run once however many repeats the others run.
   */
  readonly replayed?: boolean;
}

/**
 * Panels outside issue 11's target (the five workloads, mixed, Azure-timed mixed), by workload name:
 * checks that e2-plus generalises, counted in a claim of their own. `beyondContents` builds exactly
 * these (its names are typed by this list).
 */
const BEYOND_PANELS = [
  'sharegpt-like',
  'conversation',
  'azure-conv',
  'azure-code',
  'mooncake',
  'bailian',
] as const;
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
    ['bailian', 'bailian', options.bailianTrace, '--bailian'],
  ] as const;
  // What each kind of trace is, and where a user finds one.
  const kinds = {
    azure: { source: 'the Azure LLM inference trace 2023', example: "the team's ../shared/data" },
    mooncake: {
      source: 'a Mooncake-format trace, prefix-block hashes',
      example: "Mooncake's public FAST'25 traces",
    },
    bailian: {
      source: 'a Qwen-Bailian trace, 16-token prefix-block hashes',
      example: "Alibaba's Qwen-Bailian traces",
    },
  };
  for (const [name, kind, path, flag] of traces) {
    if (path === undefined || !existsSync(path)) {
      skipped.push(
        path === undefined
          ? `${name} skipped: no trace given (pass ${flag} FILE, e.g. ${kinds[kind].example})`
          : `${name} skipped: '${path}' not found (pass ${flag} FILE)`,
      );
      continue;
    }
    const spec = { kind, path } as const;
    // Its row count from the arrivals alone (no prompt tokens drawn).
    const rows = traceArrivals(spec).length;
    skipped.push(
      `${name}: every row of '${path}' (${rows} requests, ${kinds[kind].source}) in order, re-timed to each rate; a run that would need more requests has only these`,
    );
    list.push({
      name,
      paperSetup: false,
      maxRequests: rows,
      replayed: true,
      stream: (requests, rps, seed) => traceRequests(spec, { seed, requests, rps }),
    });
  }
  return list;
}

/**
 * Round robin's saturation rate (requests/s for the whole cluster) from a short sweep; on `fleet`'s
 * instances where given (`fleetRun`), `instances` of `costModel` otherwise.
 */
export function saturationRate(
  stream: Stream,
  instances: number,
  seed: number,
  requests: number,
  costModel = costModelPreset('mistral-7b-a6000'),
  fleet: Partial<SimSpec> = {},
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
      ...fleet,
    });
    if (Number.isNaN(reference)) reference = report.latency.mean;
    else if (report.latency.mean > SATURATION_FACTOR * reference) return { rps, reference };
  }
  return { rps: last, reference };
}

const round2 = (x: number) => Math.round(x * 100) / 100;

/** What the grid ran on, in words: Mistral-7B on A6000, or a fleet's instances by preset. */
function fleetWords(results: readonly CellResult[]): string {
  const fleet = results.find((r) => r.cell.spec.fleet !== undefined)?.cell.spec.fleet;
  if (fleet === undefined) return 'Cost model: Mistral-7B on A6000';
  const counts = new Map<string, number>();
  for (const i of fleet) counts.set(i.costModel, (counts.get(i.costModel) ?? 0) + 1);
  const parts = [...counts].map(([preset, n]) => `${n} x ${preset}`);
  return `Fleet: ${parts.join(' + ')} (each instance runs its own preset; e2-plus prices each with it)`;
}

/** A fleet's run fields for the grid, whose policies are colocated: every instance must be mixed. */
function gridFleet(fleet: Fleet): ReturnType<typeof fleetRun> {
  const other = fleet.instances.find((i) => i.role !== 'mixed');
  if (other !== undefined)
    throw new Error(
      `--fleet: the policies grid runs colocated policies; instance ${other.id} is ${other.role} (every instance must be mixed)`,
    );
  return fleetRun(fleet);
}

export const policies: Experiment = {
  name: 'policies',
  defaultRequests: 1500,
  defaultRepeats: 3,
  showWorkingSet: true,
  title:
    'Global policies grid (issue 11): e2-plus and e2 against the anchors on every workload, mixed and Azure-timed arrivals, three loads, 4 and 8 instances (or the fleet given); beyond the target, no sharing, multi-turn chat, the Azure traces and a Mooncake or Qwen-Bailian trace if given',
  cells(options: ExperimentOptions): Cell[] {
    skipped.length = 0;
    const costModel = costModelPreset('mistral-7b-a6000');
    const series = GRID_POLICIES.filter((p) => options.only === undefined || options.only.includes(p));
    const fleet = options.fleet === undefined ? undefined : gridFleet(options.fleet.fleet);
    const sizes = fleet === undefined ? GRID_SIZES : [fleet.instances];
    const cells: Cell[] = [];
    for (const content of contents(options)) {
      for (const instances of sizes) {
        const saturation = saturationRate(
          content.stream,
          instances,
          options.seed,
          options.requests,
          costModel,
          fleet,
        ).rps;
        for (const load of LOADS) {
          const rps = round2(saturation * load.share);
          // Long enough for E2's window to fill and stay full (the first window is left out as warm-up),
          // unless a trace runs out of rows first (the report says so).
          const requests = Math.min(
            steadyRequests(options.requests, rps),
            content.maxRequests ?? Number.POSITIVE_INFINITY,
          );
          // Each repeat draws the workload anew on its own seed, at the first seed's rates (pooled in the verdicts).
          const runs = content.replayed === true ? 1 : (options.repeats ?? 1);
          for (let repeat = 0; repeat < runs; repeat++) {
            const seed = options.seed + repeat;
            for (const policy of series) {
              cells.push({
                panel: `${content.name}, ${options.fleet?.label ?? `${instances} x Mistral-7B on A6000`}`,
                series: policy,
                repeat,
                spec: {
                  policy,
                  workload: content.name,
                  instances,
                  rps,
                  costModel,
                  seed,
                  warmupSeconds: warmupSeconds(requests, rps),
                  requests: () => content.stream(requests, rps, seed, instances),
                  ...fleet,
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
    const all = compare(results);
    const grid = all.filter((g) => !isBeyond(g.key));
    const beyond = all.filter((g) => isBeyond(g.key));
    const whole = compare(results, 'whole', 0);
    const bySeed = eachSeedComparisons(results);
    const firstSeed = bySeed[0]!;
    const seeds = bySeed.length;
    const seed0 = firstSeedOf(results);
    const pooled = seeds > 1;
    const lines = [
      '## How the grid is built',
      '',
      `Loads per panel: a round-robin sweep (the grid's requests per run or ${SWEEP_MIN_SECONDS} s of arrivals, whichever is more; per-instance rates ${SWEEP_RATES_PER_INSTANCE.join(', ')})`,
      `finds the first rate at which round robin's mean latency exceeds ${SATURATION_FACTOR}x its latency at the lowest rate: that is "heavy";`,
      '"medium" and "light" are a half and a quarter of it. The rates (the columns above) therefore follow the workload',
      `generators as they change. ${fleetWords(results)}; engines' queue policy lpm for every policy.`,
      "Working sets scale with the cluster as the authors' generators do (each panel states its own against the fleet's KV).",
      ...(pooled
        ? [
            `Every cell runs on ${seeds} seeds (${seedList(seed0, seeds)}), each drawing its workload anew at the rates of seed ${seed0}'s sweep`,
            `(trace replays run once: a seed changes only their prompts' token ids). The tables and plots above show seed ${seed0};`,
            "the verdicts below pool the seeds request by request (a cell's p99 is the 99th percentile of all its seeds'",
            'requests after the warm-up): a p99 of one run is one request of a hundred, and on a workload whose slowest',
            'requests are a few cold giant prompts it lands on whichever of them a seed happens to hold.',
          ]
        : []),
      ...(skipped.length > 0 ? ['', ...skipped.map((s) => `- ${s}`)] : []),
      '',
      '## e2-plus against each anchor',
      '',
      `Per cell (panel and load) and anchor: the anchor's latency divided by e2-plus's (above 1: e2-plus is faster), mean / p99${pooled ? `, over the ${seeds} seeds pooled` : ''}.`,
      `A cell is won when e2-plus is ahead by more than ${EVEN * 100}% on one of mean and p99 and not behind by more than`,
      `${EVEN * 100}% on the other, lost when it is behind by more than ${EVEN * 100}% on either, even otherwise.`,
      `Each run lasts at least three of E2's windows (${WINDOW_SECONDS} s each: at least the grid's requests, more where the rate`,
      'needs them) and every figure leaves the first window out as warm-up (caches start cold and the window empty); the',
      `last column counts the same cells over every request, the cold start included${pooled ? ` (seed ${seed0})` : ''}. The sweep that sets the rates runs`,
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
    if (pooled) {
      lines.push(
        '',
        `Each seed alone (its own runs, the warm-up left out; trace replays ran on seed ${seed0} only and count in its row):`,
        '',
        '| seed | target: won / even / lost | beyond the target: won / even / lost |',
        '|---|---|---|',
      );
      for (const [k, one] of bySeed.entries()) {
        const count = (list: readonly Comparison[]) =>
          (['won', 'even', 'lost'] as const).map((v) => list.filter((g) => g.cell === v).length).join(' / ');
        lines.push(
          `| ${seed0 + k} | ${count(one.filter((g) => !isBeyond(g.key)))} | ${count(one.filter((g) => isBeyond(g.key)))} |`,
        );
      }
    }
    lines.push('', `| cell | e2-plus mean / p99 | ${ANCHORS.join(' | ')} |`);
    lines.push(`|---|---|${ANCHORS.map(() => '---').join('|')}|`);
    for (const key of unique(all.map((g) => g.key))) {
      const row = all.filter((g) => g.key === key);
      const mine = latencyOfRuns(row[0]!.subjectRuns, 'steady');
      const cols = ANCHORS.map((a) => {
        const g = row.find((x) => x.anchor === a);
        if (g === undefined) return '';
        const mark = g.cell === 'lost' ? ' **L**' : g.cell === 'won' ? ' W' : '';
        return `${fixed(g.meanRatio, 2)} / ${fixed(g.p99Ratio, 2)}${mark}`;
      });
      lines.push(`| ${key} | ${fixed(mine.mean, 2)} / ${fixed(mine.p99, 2)} | ${cols.join(' | ')} |`);
    }
    // Each seed's own losses, where the cell ran on more than one (a trace replay's one run is its pooled row).
    const perSeed = pooled
      ? bySeed.flatMap((one, k) =>
          one
            .filter((g) => g.cell === 'lost' && repeated(results, g))
            .map((g) => ({ g, view: `seed ${seed0 + k}` })),
        )
      : [];
    const pooledView = (g: Comparison) =>
      !pooled
        ? 'warm-up left out'
        : g.subjectRuns.length > 1
          ? `${seeds} seeds pooled`
          : `seed ${seed0} (run once)`;
    const lost = [
      ...all.filter((g) => g.cell === 'lost').map((g) => ({ g, view: pooledView(g) })),
      ...perSeed,
      ...whole
        .filter((g) => g.cell === 'lost')
        .map((g) => ({ g, view: pooled ? `seed ${seed0}, whole run` : 'whole run' })),
    ];
    lines.push('', '## Where e2-plus loses, and the mechanism measured', '');
    if (lost.length === 0) lines.push(`Nowhere in this grid, in ${pooled ? 'any' : 'either'} view.`);
    else {
      lines.push(
        `Per lost comparison (in ${pooled ? 'any' : 'either'} view): cached share of prompt tokens (hit), load spread (max / mean requests`,
        'per instance), mean TTFT (queueing before the first token) and mean TPOT (decode), e2-plus against the anchor,',
        'after the warm-up; the mechanism names the largest relative difference among them. The interval of the lost ratio is a',
        `${INTERVAL_LEVEL * 100}% paired bootstrap over the requests (${INTERVAL_RESAMPLES} resamples of the n requests both policies completed, each`,
        "request's two latencies kept together; warm-up views only): how far the ratio moves with another draw of requests",
        "within these runs. It leaves out what varies from run to run (a run's requests share its queues and caches), and a",
        'p99 rests on the slowest 1% of the n requests. A loss is **firm** when its interval lies entirely below',
        `${1 - EVEN}${pooled ? ' and, pooled over seeds, each seed alone lost it too' : ''}; one that is not firm could be a draw of requests${pooled ? ' or of seeds' : ''}.`,
        ...(pooled ? ["A pooled row gives each seed's ratios in place of the mechanism."] : []),
        '',
        '| cell | anchor | view | mean / p99 ratio | interval of the lost ratio | hit | spread | TTFT mean | TPOT mean | mechanism |',
        '|---|---|---|---|---|---|---|---|---|---|',
      );
      for (const { g, view } of lost) {
        const ratios = `${fixed(g.meanRatio, 2)} / ${fixed(g.p99Ratio, 2)}`;
        const isWhole = view.endsWith('whole run');
        const interval = isWhole ? '-' : lossIntervalText(g);
        if (g.subjectRuns.length > 1) {
          lines.push(
            `| ${g.key} | ${g.anchor} | ${view} | ${ratios} | ${interval} | - | - | - | - | per seed, mean / p99: ${perSeedRatios(g)} |`,
          );
          continue;
        }
        const a = g.other.report;
        const s = g.subject.report;
        const steadyLost = firstSeed.some(
          (x) => x.key === g.key && x.anchor === g.anchor && x.cell === 'lost',
        );
        const why =
          isWhole && !steadyLost ? 'the cold start: lost only with the warm-up counted' : mechanism(g);
        lines.push(
          `| ${g.key} | ${g.anchor} | ${view} | ${ratios} | ${interval} | ${fixed(s.cacheHitRate, 3)} vs ${fixed(a.cacheHitRate, 3)} | ${fixed(spread(g.subject), 2)} vs ${fixed(spread(g.other), 2)} | ${fixed(s.ttft.mean, 2)} vs ${fixed(a.ttft.mean, 2)} | ${fixed(s.tpot.mean, 4)} vs ${fixed(a.tpot.mean, 4)} | ${why} |`,
        );
      }
    }
    const paper = e2VsRoundRobinLines(paperCells(results));
    if (paper.length > 0) lines.push('', ...paper);
    lines.push('');
    return lines.join('\n');
  },
  claims(results: readonly CellResult[]): Claim[] {
    const claims: Claim[] = [];
    const all = compare(results);
    const grid = all.filter((g) => !isBeyond(g.key));
    const beyond = all.filter((g) => isBeyond(g.key));
    const bySeed = eachSeedComparisons(results);
    const seeds = bySeed.length;
    const seed0 = firstSeedOf(results);
    const pooled = seeds > 1 ? `, over seeds ${seedList(seed0, seeds)} pooled request by request` : '';
    /** Lost comparisons on each seed's runs alone, for the claims line. */
    const eachSeed = (target: boolean) =>
      seeds > 1
        ? `; each seed alone (${seedList(seed0, seeds)}${target ? '' : `; trace replays on seed ${seed0} only`}): lost ${bySeed
            .map((one) => one.filter((g) => isBeyond(g.key) !== target && g.cell === 'lost').length)
            .join(' / ')}`
        : '';
    if (grid.length > 0) {
      const whole = compare(results, 'whole', 0).filter((g) => !isBeyond(g.key));
      claims.push({
        id: 'e2-plus-vs-anchors',
        source: 'issue 11 (ours)',
        statement: `e2-plus at or ahead of every anchor on mean and p99 in every cell (the stated warm-up left out${pooled})`,
        paper: '-',
        measured: `${tally(grid)}${firmLosses(grid)}${eachSeed(true)}`,
        holds: grid.every((g) => g.cell !== 'lost'),
      });
      claims.push({
        id: 'e2-plus-vs-anchors-whole-run',
        source: 'issue 11 (ours)',
        statement: `the same over every request of each run, the cold start included${seeds > 1 ? ` (seed ${seed0})` : ''}`,
        paper: '-',
        measured: tally(whole),
        holds: whole.every((g) => g.cell !== 'lost'),
      });
    }
    if (beyond.length > 0) {
      claims.push({
        id: 'e2-plus-vs-anchors-beyond',
        source: 'ours (beyond issue 11)',
        statement: `the same on workloads outside the target (${beyondNames(beyond).join(', ')}), the warm-up left out${pooled}`,
        paper: '-',
        measured: `${tally(beyond)}${firmLosses(beyond)}${eachSeed(false)}`,
        holds: beyond.every((g) => g.cell !== 'lost'),
      });
    }
    const paper = e2VsRoundRobinClaim(paperCells(results), seeds > 1 ? `; seed ${seed0}` : '');
    if (paper !== undefined) claims.push(paper);
    return claims;
  },
};

type Verdict = 'won' | 'even' | 'lost';

interface Comparison {
  readonly key: string;
  readonly anchor: string;
  /** The first runs (seed `--seed`) of e2-plus and the anchor in this cell: the mechanism columns read them. */
  readonly subject: CellResult;
  readonly other: CellResult;
  /** Every run the ratios pool (one per seed; just the first outside a pooled comparison). */
  readonly subjectRuns: readonly CellResult[];
  readonly otherRuns: readonly CellResult[];
  /** Anchor over e2-plus: above 1, e2-plus is faster. */
  readonly meanRatio: number;
  readonly p99Ratio: number;
  readonly mean: Verdict;
  readonly p99: Verdict;
  readonly cell: Verdict;
}

/** The grid's words for `standingOf`: e2-plus won, is even or lost against the anchor. */
const VERDICT_OF: Record<Standing, Verdict> = { ahead: 'won', even: 'even', behind: 'lost' };

function verdict(ratio: number): Verdict {
  return VERDICT_OF[standingOf(ratio)];
}

/**
 * Which latency a comparison reads: `steady` leaves the stated warm-up out (the grid's headline, like
 * every Preble experiment); `whole` counts every request, the cold start included.
 */
type View = 'steady' | 'whole';

/** Which runs a comparison reads: every seed's, pooled request by request, or one seed's (its repeat). */
type Scope = 'pooled' | number;

/** The run's repeat index (0: the first seed). */
const repeatOf = (r: CellResult) => r.cell.repeat ?? 0;

/** Each seed's comparisons on its own runs (the warm-up left out), in seed order. */
function eachSeedComparisons(results: readonly CellResult[]): Comparison[][] {
  const seeds = Math.max(0, ...results.map(repeatOf)) + 1;
  return Array.from({ length: seeds }, (_, k) => compare(results, 'steady', k));
}

/**
 * Mean and p99 latency of `runs` together: one run's own figures, or over the union of the runs'
 * requests after the warm-up (a p99 of several seeds is the 99th percentile of all their requests).
 */
function latencyOfRuns(runs: readonly CellResult[], view: View): { mean: number; p99: number } {
  if (runs.length === 1) {
    const r = runs[0]!;
    return view === 'whole' ? (r.report.warmup?.wholeRunLatency ?? r.report.latency) : r.report.latency;
  }
  if (view === 'whole') throw new Error('the whole-run view reads one seed');
  if (runs.some((r) => r.steady === undefined))
    throw new Error('pooling runs needs their per-request latencies');
  return percentiles(pooledLatency(runs).latency);
}

/** The runs' steady latencies in one sample, each request named by its run's repeat and its id. */
function pooledLatency(runs: readonly CellResult[]): { ids: string[]; latency: Float64Array } {
  const ids = runs.flatMap((r) => r.steady!.ids.map((id) => `${repeatOf(r)}:${id}`));
  const latency = new Float64Array(ids.length);
  let at = 0;
  for (const r of runs) {
    latency.set(r.steady!.latency, at);
    at += r.steady!.latency.length;
  }
  return { ids, latency };
}

function compare(
  results: readonly CellResult[],
  view: View = 'steady',
  scope: Scope = 'pooled',
): Comparison[] {
  const first = scope === 'pooled' ? 0 : scope;
  const out: Comparison[] = [];
  for (const s of results.filter((r) => r.cell.series === SUBJECT && repeatOf(r) === first)) {
    const key = `${s.cell.panel} @ ${s.report.rps} rps (${loadOf(results, s)})`;
    const runsOf = (series: string) =>
      results.filter(
        (r) =>
          r.cell.series === series &&
          r.cell.panel === s.cell.panel &&
          r.report.rps === s.report.rps &&
          (scope === 'pooled' || repeatOf(r) === scope),
      );
    const subjectRuns = runsOf(SUBJECT);
    const mine = latencyOfRuns(subjectRuns, view);
    for (const anchor of ANCHORS) {
      const otherRuns = runsOf(anchor);
      const other = otherRuns.find((r) => repeatOf(r) === first);
      if (other === undefined) continue;
      const theirs = latencyOfRuns(otherRuns, view);
      const meanRatio = theirs.mean / mine.mean;
      const p99Ratio = theirs.p99 / mine.p99;
      const mean = verdict(meanRatio);
      const p99 = verdict(p99Ratio);
      const cell: Verdict =
        mean === 'lost' || p99 === 'lost' ? 'lost' : mean === 'won' || p99 === 'won' ? 'won' : 'even';
      out.push({
        key,
        anchor,
        subject: s,
        other,
        subjectRuns,
        otherRuns,
        meanRatio,
        p99Ratio,
        mean,
        p99,
        cell,
      });
    }
  }
  return out;
}

/** The seed of the grid's first runs. */
function firstSeedOf(results: readonly CellResult[]): number {
  return results.find((r) => repeatOf(r) === 0)?.cell.spec.seed ?? 0;
}

function seedList(first: number, seeds: number): string {
  return Array.from({ length: seeds }, (_, k) => first + k).join(', ');
}

/** Whether the comparison's cell ran on more than one seed (a trace replay runs once). */
function repeated(results: readonly CellResult[], g: Comparison): boolean {
  return results.some((r) => r.cell.panel === g.subject.cell.panel && repeatOf(r) > 0);
}

/** A pooled comparison's ratios on each seed alone, mean / p99, in seed order. */
function perSeedRatios(g: Comparison): string {
  return g.subjectRuns
    .map((s) => {
      const other = g.otherRuns.find((r) => repeatOf(r) === repeatOf(s));
      if (other === undefined) return '';
      return `${fixed(other.report.latency.mean / s.report.latency.mean, 2)} / ${fixed(other.report.latency.p99 / s.report.latency.p99, 2)}`;
    })
    .join(', ');
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

/** The paired bootstrap behind each lost comparison's interval (`pairedRatioInterval`). */
const INTERVAL_LEVEL = 0.95;
const INTERVAL_RESAMPLES = 1000;

/**
 * Each lost ratio's interval, by e2-plus's first run, the anchor's first run and the runs pooled
 * (discuss and claims both ask; the bootstrap is not free).
 */
const intervals = new WeakMap<CellResult, WeakMap<CellResult, Map<number, readonly LostInterval[]>>>();

interface LostInterval {
  readonly stat: 'mean' | 'p99';
  readonly ratio: number;
  readonly lo: number;
  readonly hi: number;
  /** Requests paired. */
  readonly n: number;
  /** The interval lies below even and every run pooled lost this ratio on its own. */
  readonly firm: boolean;
}

/**
 * The paired bootstrap interval of each ratio a comparison lost on (anchor over e2-plus, the warm-up
 * left out), over the requests both policies completed in the runs it pools; none where a result
 * carries no per-request latencies.
 */
function lostIntervals(g: Comparison): readonly LostInterval[] {
  const bySubject =
    intervals.get(g.subject) ?? new WeakMap<CellResult, Map<number, readonly LostInterval[]>>();
  intervals.set(g.subject, bySubject);
  const byOther = bySubject.get(g.other) ?? new Map<number, readonly LostInterval[]>();
  bySubject.set(g.other, byOther);
  const known = byOther.get(g.subjectRuns.length);
  if (known !== undefined) return known;
  const out: LostInterval[] = [];
  const anyLost = verdict(g.meanRatio) === 'lost' || verdict(g.p99Ratio) === 'lost';
  const paired =
    anyLost && [...g.subjectRuns, ...g.otherRuns].every((r) => r.steady !== undefined)
      ? comparePaired(pooledLatency(g.subjectRuns), pooledLatency(g.otherRuns), {
          level: INTERVAL_LEVEL,
          resamples: INTERVAL_RESAMPLES,
        })
      : undefined;
  if (paired !== undefined) {
    for (const [stat, ratio] of [
      ['mean', g.meanRatio],
      ['p99', g.p99Ratio],
    ] as const) {
      if (verdict(ratio) !== 'lost') continue;
      const { lo, hi } = paired[stat];
      const eachRunLost = g.subjectRuns.every((s) => {
        const o = g.otherRuns.find((r) => repeatOf(r) === repeatOf(s));
        return o !== undefined && verdict(o.report.latency[stat] / s.report.latency[stat]) === 'lost';
      });
      out.push({ stat, ratio, lo, hi, n: paired.n, firm: hi < 1 - EVEN && eachRunLost });
    }
  }
  byOther.set(g.subjectRuns.length, out);
  return out;
}

function lossIntervalText(g: Comparison): string {
  const list = lostIntervals(g);
  if (list.length === 0) return '-';
  return list
    .map((i) => `${i.stat} ${fixed(i.lo, 2)}-${fixed(i.hi, 2)}, n ${i.n}${i.firm ? ' (**firm**)' : ''}`)
    .join('; ');
}

/** How many lost comparisons lost firmly on some ratio (the claims line; nothing when none lost). */
function firmLosses(grid: readonly Comparison[]): string {
  const lost = grid.filter((g) => g.cell === 'lost');
  if (lost.length === 0) return '';
  const firm = lost.filter((g) => lostIntervals(g).some((i) => i.firm)).length;
  const pooled = lost.some((g) => g.subjectRuns.length > 1);
  return `; lost firmly (the lost ratio's ${INTERVAL_LEVEL * 100}% paired-bootstrap interval over requests entirely below ${1 - EVEN}${pooled ? ', and lost on each seed alone' : ''}): ${firm} of ${lost.length}`;
}

/** The load name of a result's rate within its panel (rates sorted: light, medium, heavy). */
function loadOf(results: readonly CellResult[], r: CellResult): string {
  const rates = unique(results.filter((x) => x.cell.panel === r.cell.panel).map((x) => x.report.rps)).sort(
    (a, b) => a - b,
  );
  return LOADS[rates.indexOf(r.report.rps)]?.name ?? `${r.report.rps} rps`;
}

/**
 * E2 against round robin in the paper's setup (one workload, medium and heavy load, one GPU model, the
 * first seed), each cell with its stream's latency floor: once per run (it regenerates the streams).
 */
const paperCells = oncePerRun((results) =>
  e2Cells(results, (r) => {
    if (repeatOf(r) !== 0 || !paperPanel(r.cell.panel) || r.cell.spec.fleet !== undefined) return undefined;
    const load = loadOf(results, r);
    return load === 'light' ? undefined : load;
  }),
);

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
