import { costModelPreset } from '../core/cost-model/presets.ts';
import { buildFleet, type Fleet } from '../core/fleet/fleet.ts';
import { parseFleetConfig } from '../core/fleet/spec.ts';
import { prefixPdDefaults } from '../core/policies/disagg/prefix-aware.ts';
import { fixed } from '../report/text-table.ts';
import type { SimReport, SimSpec } from '../sim/run.ts';
import { createWorkload } from '../workloads/registry.ts';
import { E2E_RATES_PER_INSTANCE } from './preble-e2e.ts';
import type { Cell, CellResult, Claim, Experiment, ExperimentOptions } from './types.ts';

/** Preble's 4-GPU cluster (paper, Figure 3): Mistral-7B on A6000s, one GPU per instance. */
export const PREFIX_DISAGG_MODEL = 'mistral-7b-a6000';
const INSTANCES = 4;
/** Preble's workloads with long shared prefixes (tools, video frames, the agent's instructions). */
export const PREFIX_DISAGG_WORKLOADS = ['toolbench', 'video-qa', 'embodied-agent'] as const;
/** Two loads per workload: preble-e2e's first two rates per instance (low and middle of its sweep). */
const LOADS = 2;

type FleetName = '4M' | '2P2D' | '1P1D2M';

interface Design {
  readonly series: string;
  readonly policy: string;
  readonly fleet: FleetName;
}

export const PREFIX_DISAGG_DESIGNS: readonly Design[] = [
  { series: 'e2 (4M)', policy: 'e2', fleet: '4M' },
  { series: 'prefix-pd (2P2D)', policy: 'prefix-pd', fleet: '2P2D' },
  { series: 'prefix-pd (1P1D2M)', policy: 'prefix-pd', fleet: '1P1D2M' },
  { series: 'distserve (2P2D)', policy: 'distserve', fleet: '2P2D' },
  { series: 'splitwise (2P2D)', policy: 'splitwise', fleet: '2P2D' },
  { series: 'splitwise (1P1D2M)', policy: 'splitwise', fleet: '1P1D2M' },
];
const COLOCATED = 'e2 (4M)';
const PD = 'prefix-pd (2P2D)';
const PD_MIXED = 'prefix-pd (1P1D2M)';
const DISTSERVE = 'distserve (2P2D)';

/**
 * Four A6000s on one node. A6000 boxes have no NVLink between every pair, so KV moves over PCIe through
 * host memory (`pcie-host`, 25 GB/s; docs/fleets.md), serialized (the fleet's default mode; splitwise
 * picks its own per request).
 */
export function prefixDisaggFleet(name: FleetName): Fleet {
  const counts: Record<FleetName, [number, number, number]> = {
    '4M': [0, 0, 4],
    '2P2D': [2, 2, 0],
    '1P1D2M': [1, 1, 2],
  };
  const [p, d, m] = counts[name];
  const instances = [
    { role: 'prefill', count: p },
    { role: 'decode', count: d },
    { role: 'mixed', count: m },
  ]
    .filter((s) => s.count > 0)
    .map((s) => ({ ...s, model: PREFIX_DISAGG_MODEL }));
  return buildFleet(parseFleetConfig({ instances, nodeLink: 'pcie-host' }));
}

function specFor(design: Design, workload: string, rps: number, requests: number, seed: number): SimSpec {
  const fleet = prefixDisaggFleet(design.fleet);
  const disaggregated = fleet.instances.some((i) => i.role !== 'mixed');
  return {
    policy: design.policy,
    workload,
    instances: INSTANCES,
    rps,
    costModel: costModelPreset(PREFIX_DISAGG_MODEL),
    seed,
    ...(disaggregated
      ? { fleet: fleet.instances, kvTransfer: { placement: fleet, mode: fleet.transferMode } }
      : {}),
    requests: () => createWorkload(workload, { requests, rps, seed, instances: INSTANCES }),
  };
}

export function prefixDisaggRates(workload: string): number[] {
  return E2E_RATES_PER_INSTANCE[PREFIX_DISAGG_MODEL]![workload]!.slice(0, LOADS).map((x) => x * INSTANCES);
}

const panelOf = (workload: string) => `${workload}, ${INSTANCES} x Mistral-7B on A6000`;

/** One (workload, rate) point with the series that ran there. */
interface Point {
  readonly workload: string;
  readonly rps: number;
  readonly by: ReadonlyMap<string, SimReport>;
}

function points(results: readonly CellResult[]): Point[] {
  const out: Point[] = [];
  for (const workload of PREFIX_DISAGG_WORKLOADS) {
    const panel = panelOf(workload);
    const inPanel = results.filter((r) => r.cell.panel === panel);
    for (const rps of [...new Set(inPanel.map((r) => r.report.rps))].sort((a, b) => a - b)) {
      const by = new Map(inPanel.filter((r) => r.report.rps === rps).map((r) => [r.cell.series, r.report]));
      out.push({ workload, rps, by });
    }
  }
  return out;
}

const gb = (bytes: number) => `${fixed(bytes / 1e9, 2)} GB`;
const pct = (x: number) => `${fixed(100 * x, 1)}%`;
const movedBytes = (r: SimReport) => r.kvMoved?.bytes ?? 0;
/** Share of the disaggregated requests' KV that the decode instance already cached (did not move). */
const cachedAtDecode = (r: SimReport) =>
  r.kvMoved === undefined || r.kvMoved.kvTokens === 0 ? 0 : 1 - r.kvMoved.tokens / r.kvMoved.kvTokens;
const disaggregatedShare = (r: SimReport) => (r.kvMoved?.transfers ?? 0) / Math.max(1, r.requests);
const where = (p: Point) => `${p.workload} ${p.rps} rps`;

function notMeasured(claim: Omit<Claim, 'measured' | 'holds'>, what: string): Claim {
  return { ...claim, measured: `not measured: ${what} must run`, holds: false };
}

function bytesClaim(ps: readonly Point[]): Claim {
  const claim = {
    id: 'kv-bytes-vs-distserve',
    source: 'Preble issue 10, item 9 (our hypothesis; DistServe and Splitwise model no prefix cache)',
    statement:
      'on shared-prefix workloads, prefix-aware disaggregation (prefix-pd, 2P2D) moves fewer KV bytes than distserve on the same fleet, at every workload and load',
    paper:
      'none: neither DistServe nor Splitwise models prefix caching, so neither reports bytes saved by it',
  };
  const both = ps.filter((p) => p.by.has(PD) && p.by.has(DISTSERVE));
  if (both.length === 0) return notMeasured(claim, `${PD} and ${DISTSERVE}`);
  const parts = both.map((p) => {
    const a = p.by.get(PD)!;
    const b = p.by.get(DISTSERVE)!;
    return `${where(p)}: ${gb(movedBytes(a))} vs ${gb(movedBytes(b))} (${pct(cachedAtDecode(a))} vs ${pct(cachedAtDecode(b))} of the KV already on the decode instance)`;
  });
  return {
    ...claim,
    measured: `prefix-pd vs distserve, KV moved: ${parts.join('; ')}`,
    holds: both.every((p) => movedBytes(p.by.get(PD)!) < movedBytes(p.by.get(DISTSERVE)!)),
  };
}

/** prefix-pd's (either fleet) mean and p99 latency against another series', point by point. */
function latencyClaim(
  ps: readonly Point[],
  id: string,
  other: string,
  statement: string,
  series: readonly string[],
): Claim {
  const claim = {
    id,
    source: 'Preble issue 10, item 9 (our hypothesis)',
    statement,
    paper:
      'none: DistServe (OSDI 24) and Splitwise (ISCA 24) compare disaggregation with colocation without prefix caching',
  };
  const both = ps.filter((p) => p.by.has(other) && series.some((s) => p.by.has(s)));
  if (both.length === 0) return notMeasured(claim, `${series.join(' or ')} and ${other}`);
  let holds = true;
  const parts = both.map((p) => {
    const o = p.by.get(other)!;
    const mine = series.filter((s) => p.by.has(s)).map((s) => [s, p.by.get(s)!] as const);
    const best = mine.reduce((a, b) => (b[1].latency.mean < a[1].latency.mean ? b : a));
    if (!(best[1].latency.mean <= o.latency.mean && best[1].latency.p99 <= o.latency.p99)) holds = false;
    return `${where(p)}: ${mine.map(([s, r]) => `${s} ${fixed(r.latency.mean, 2)} / ${fixed(r.latency.p99, 2)} s`).join(', ')}; ${other} ${fixed(o.latency.mean, 2)} / ${fixed(o.latency.p99, 2)} s`;
  });
  return { ...claim, measured: `mean / p99 latency: ${parts.join('; ')}`, holds };
}

function decoderClaim(ps: readonly Point[]): Claim {
  const claim = {
    id: 'decider-colocates-cached-prompts',
    source: 'Preble issue 10, item 9 (the decider)',
    statement:
      'with mixed instances (1P1D2M), prefix-pd runs most requests of these workloads colocated (their uncached prefill is short) and moves less KV than on 2P2D',
    paper: 'none',
  };
  const both = ps.filter((p) => p.by.has(PD) && p.by.has(PD_MIXED));
  if (both.length === 0) return notMeasured(claim, `${PD} and ${PD_MIXED}`);
  const parts = both.map((p) => {
    const m = p.by.get(PD_MIXED)!;
    return `${where(p)}: ${pct(1 - disaggregatedShare(m))} run colocated (decided or overflowed), ${gb(movedBytes(m))} moved vs ${gb(movedBytes(p.by.get(PD)!))} on 2P2D`;
  });
  return {
    ...claim,
    measured: parts.join('; '),
    holds: both.every((p) => {
      const m = p.by.get(PD_MIXED)!;
      return disaggregatedShare(m) < 0.5 && movedBytes(m) < movedBytes(p.by.get(PD)!);
    }),
  };
}

export const prefixDisagg: Experiment = {
  name: 'prefix-disagg',
  defaultRequests: 3000,
  title:
    'Prefix-aware disaggregation (issue 10, item 9): prefix-pd vs colocated e2, distserve and splitwise on 4 A6000s, shared-prefix workloads',
  cells(options: ExperimentOptions): Cell[] {
    const cells: Cell[] = [];
    for (const workload of PREFIX_DISAGG_WORKLOADS) {
      for (const rps of prefixDisaggRates(workload)) {
        for (const design of PREFIX_DISAGG_DESIGNS) {
          if (options.only !== undefined && !options.only.includes(design.series)) continue;
          cells.push({
            panel: panelOf(workload),
            series: design.series,
            spec: specFor(design, workload, rps, options.requests, options.seed),
          });
        }
      }
    }
    return cells;
  },
  claims(results: readonly CellResult[]): Claim[] {
    const ps = points(results);
    return [
      bytesClaim(ps),
      latencyClaim(
        ps,
        'latency-vs-colocated-e2',
        COLOCATED,
        'prefix-pd (on 2P2D or 1P1D2M, the better) has a mean and p99 latency no higher than colocated e2 on the same 4 GPUs, at every workload and load',
        [PD, PD_MIXED],
      ),
      latencyClaim(
        ps,
        'latency-vs-distserve',
        DISTSERVE,
        'prefix-pd has a mean and p99 latency no higher than distserve on the same 2P2D fleet, at every workload and load',
        [PD],
      ),
      decoderClaim(ps),
    ];
  },
  discuss(results: readonly CellResult[]): string {
    const ps = points(results);
    const lines = [
      '## Setup',
      '',
      `${INSTANCES} instances of \`${PREFIX_DISAGG_MODEL}\` (one A6000 each, on one node; KV over \`pcie-host\`, 25 GB/s,`,
      'serialized). Fleets: 4M (4 mixed), 2P2D (2 prefill + 2 decode), 1P1D2M (1 prefill, 1 decode, 2 mixed).',
      'Engines: `lpm` queue and 512-token chunks for e2 and prefix-pd (the defaults), `fcfs` for distserve and',
      'splitwise (and 2,048-token prompt batches for splitwise): each system as it is designed. prefix-pd runs',
      'with its defaults: E2 places prefills, disaggregate when the uncached prefill takes over 0.1 s.',
      `Rates: preble-e2e's first two per instance, times ${INSTANCES}.`,
      '',
      '## The mechanism, per workload and load',
      '',
      "KV moved: bytes over the link; cached at decode: share of the moved requests' KV the decode instance",
      'already held (it did not move); disagg.: share of requests whose KV moved (a request of one output',
      "token ends at its prefill and moves nothing); decode queue: mean seconds from the KV's arrival to the",
      "decode instance's admission; hit: the engines' prefix cache hit rate.",
      '',
      '| workload | rps | series | KV moved | cached at decode | disagg. | decode queue s | hit | TTFT mean / p99 s | TPOT mean s | latency mean / p99 s |',
      '|---|---|---|---|---|---|---|---|---|---|---|',
    ];
    for (const p of ps) {
      for (const design of PREFIX_DISAGG_DESIGNS) {
        const r = p.by.get(design.series);
        if (r === undefined) continue;
        const moved = r.kvMoved === undefined;
        lines.push(
          `| ${p.workload} | ${p.rps} | ${design.series} | ${moved ? '-' : gb(movedBytes(r))} | ${moved ? '-' : pct(cachedAtDecode(r))} | ${pct(disaggregatedShare(r))} | ${r.stages === undefined ? '-' : fixed(r.stages.decodeQueue.mean, 3)} | ${fixed(r.cacheHitRate, 3)} | ${fixed(r.ttft.mean, 3)} / ${fixed(r.ttft.p99, 2)} | ${fixed(r.tpot.mean, 4)} | ${fixed(r.latency.mean, 2)} / ${fixed(r.latency.p99, 2)} |`,
        );
      }
    }
    const decisions = ps.flatMap((p) => {
      const r = p.by.get(PD_MIXED);
      if (r === undefined) return [];
      const b = r.branches;
      return [
        `${where(p)}: ${b.colocated ?? 0} colocated, ${b.disaggregated ?? 0} disaggregated, ${b['prefill-overflow'] ?? 0} overflowed`,
      ];
    });
    if (decisions.length > 0)
      lines.push(
        '',
        `${PD_MIXED}'s decisions (of ${ps[0]?.by.get(PD_MIXED)?.requests ?? 0} requests): ${decisions.join('; ')}.`,
      );
    const costModel = costModelPreset(PREFIX_DISAGG_MODEL);
    const context = 2000;
    const step = (n: number) =>
      costModel.iterationTime({
        requests: n,
        newTokens: n,
        seqTokens: n * context,
        newTimesSeq: n * context,
      });
    const extra = prefixPdDefaults.defaultOutputTokens * (step(11) - step(10));
    const cachedSaving = (1000 * costModel.kvBytesPerToken) / prefixPdDefaults.linkBandwidth;
    lines.push(
      '',
      "## The decode choice's trade-off on this model",
      '',
      `prefix-pd prices a decode candidate as the uncached KV's transfer plus the request's decode time in the`,
      `candidate's batch. Here, 1,000 cached tokens save ${fixed(1000 * cachedSaving, 2)} ms of transfer (${costModel.kvBytesPerToken} bytes per`,
      `token over ${prefixPdDefaults.linkBandwidth / 1e9} GB/s), while one more request in a decode batch (${context}-token contexts) costs`,
      `${fixed(1000 * (step(11) - step(10)), 3)} ms per step, ${fixed(1000 * extra, 1)} ms over ${prefixPdDefaults.defaultOutputTokens} output tokens: the cache decides only between`,
      'decode instances whose loads differ by less than one request, so on 2P2D prefix-pd can move about as',
      "many bytes as distserve's least-loaded choice (`kv-bytes-vs-distserve` measures it). Fewer bytes come",
      'from the decider (1P1D2M), which moves only the requests whose uncached prefill is long.',
      '',
    );
    return lines.join('\n');
  },
};
