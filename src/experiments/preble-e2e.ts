import { costModelPreset } from '../core/cost-model/presets.ts';
import { globalPolicyNames } from '../core/policies/registry.ts';
import { fixed } from '../report/text-table.ts';
import { createWorkload } from '../workloads/registry.ts';
import { idealHitRate } from './ideal-hit.ts';
import { specFloor } from './latency-floor.ts';
import { range, ratiosTo } from './ratios.ts';
import { panelMemory } from './report.ts';
import type { Cell, CellResult, Experiment, ExperimentOptions } from './types.ts';
import { steadyRequests, WINDOW_SECONDS, warmupSeconds } from './warmup.ts';

interface Cluster {
  readonly label: string;
  readonly model: string;
  readonly instances: number;
}

const CLUSTERS: readonly Cluster[] = [
  { label: '2 x Mistral-7B on A6000', model: 'mistral-7b-a6000', instances: 2 },
  { label: '4 x Mistral-7B on A6000', model: 'mistral-7b-a6000', instances: 4 },
  { label: '8 x H100 as 2 x Llama-3-70B (TP4)', model: 'llama3-70b-h100', instances: 2 },
];

/**
 * Arrival rates per instance for each workload and model, low to near saturation. Chosen from
 * short calibration runs of round robin (the paper sweeps RPS the same way, per workload).
 */
export const E2E_RATES_PER_INSTANCE: Record<string, Record<string, readonly number[]>> = {
  'mistral-7b-a6000': {
    toolbench: [2, 4, 6],
    'embodied-agent': [2, 4, 6],
    programming: [0.5, 1, 1.5],
    'video-qa': [0.5, 1, 1.5],
    loogle: [0.1, 0.2, 0.3],
  },
  'llama3-70b-h100': {
    toolbench: [2, 4, 6],
    'embodied-agent': [2, 4, 6],
    programming: [0.5, 1, 1.5],
    'video-qa': [0.5, 1, 1.5],
    loogle: [0.1, 0.2, 0.3],
  },
};

export const WORKLOADS = ['toolbench', 'embodied-agent', 'programming', 'video-qa', 'loogle'] as const;

export const prebleE2e: Experiment = {
  name: 'preble-e2e',
  defaultRequests: 3000,
  showWorkingSet: true,
  title: "Preble's end-to-end grid (paper, Figure 3): five workloads, three clusters, every global policy",
  cells(options: ExperimentOptions): Cell[] {
    const policies = globalPolicyNames.filter((p) => options.only === undefined || options.only.includes(p));
    const cells: Cell[] = [];
    for (const workload of WORKLOADS) {
      for (const cluster of CLUSTERS) {
        const costModel = costModelPreset(cluster.model);
        for (const perInstance of E2E_RATES_PER_INSTANCE[cluster.model]![workload]!) {
          const rps = perInstance * cluster.instances;
          // Long enough for E2's window to fill and stay full: the first window is left out as warm-up.
          const requests = steadyRequests(options.requests, rps);
          for (const policy of policies) {
            cells.push({
              panel: `${workload}, ${cluster.label}`,
              series: policy,
              spec: {
                policy,
                workload,
                instances: cluster.instances,
                rps,
                costModel,
                seed: options.seed,
                warmupSeconds: warmupSeconds(requests, rps),
                // The working set scales with the cluster, as the authors' generators do.
                requests: () =>
                  createWorkload(workload, {
                    requests,
                    rps,
                    seed: options.seed,
                    instances: cluster.instances,
                  }),
              },
            });
          }
        }
      }
    }
    return cells;
  },
  discuss(results: readonly CellResult[]): string {
    const ratios = ratiosTo('round-robin', results).filter((r) => r.series === 'e2');
    if (ratios.length === 0) return '';
    const mean = range(ratios.map((r) => r.meanLatency));
    const p99 = range(ratios.map((r) => r.p99Latency));
    const lines = [
      '## E2 against round robin',
      '',
      `Over all panels and rates, round robin's mean latency divided by E2's ranges from ${fixed(mean.min, 2)}x to`,
      `${fixed(mean.max, 2)}x, and the p99 ratio from ${fixed(p99.min, 2)}x to ${fixed(p99.max, 2)}x (above 1: E2 is faster).`,
      'The paper reports 1.5x to 14.5x (mean) and 2x to 10x (p99) against SGLang with round-robin data',
      'parallelism on real GPUs.',
      '',
      "What explains each panel, at its highest rate: round robin's mean over the latency floor (each measured request",
      'alone on an idle instance with every earlier prompt cached: the most any placement could gain over round robin),',
      'the cache hit rate each policy achieved (prefill saved)',
      'against the ideal (the share of prompt tokens repeating an earlier prefix: one infinite cache),',
      "the load spread (busiest instance's busy fraction over the least busy one's: E2 concentrates a prefix's",
      'traffic), the mean busy fraction under round robin (how loaded the cluster is), preemptions (memory',
      'pressure), the mean output length (decode share of the work) and the working set (live shared-prefix',
      "tokens) over the fleet's KV and over one instance's: round robin sends every prefix everywhere, so each",
      'instance needs the whole working set; a policy that partitions prefixes needs it across the fleet.',
      '',
      '| panel | RR / E2 mean | RR / E2 p99 | RR / floor mean | hit E2 / RR / ideal | spread E2 / RR | RR busy | preempt E2 / RR | mean output | working set / fleet KV / instance KV |',
      '|---|---|---|---|---|---|---|---|---|---|',
    ];
    for (const panel of [...new Set(results.map((r) => r.cell.panel))]) {
      const inPanel = results.filter((r) => r.cell.panel === panel);
      const top = Math.max(...inPanel.map((r) => r.report.rps));
      const e2 = inPanel.find((r) => r.cell.series === 'e2' && r.report.rps === top);
      const rr = inPanel.find((r) => r.cell.series === 'round-robin' && r.report.rps === top);
      if (e2 === undefined || rr === undefined) continue;
      const spread = (r: CellResult) => {
        const busy = r.report.perInstance.map((i) => i.busyFraction);
        return Math.min(...busy) > 0 ? fixed(Math.max(...busy) / Math.min(...busy), 2) : 'inf';
      };
      const busy =
        rr.report.perInstance.reduce((s, i) => s + i.busyFraction, 0) / rr.report.perInstance.length;
      const ideal = idealHitRate(e2.cell.spec.requests());
      const memory = panelMemory(e2);
      const ws = `${fixed(memory.workingSetTokens / 1000, 0)}k / ${fixed(memory.workingSetTokens / memory.fleetKvTokens, 2)} / ${fixed(memory.workingSetTokens / memory.instanceKvTokens, 2)}`;
      lines.push(
        `| ${panel} @ ${top} rps | ${fixed(rr.report.latency.mean / e2.report.latency.mean, 2)}x | ${fixed(rr.report.latency.p99 / e2.report.latency.p99, 2)}x | ${fixed(rr.report.latency.mean / specFloor(e2.cell.spec).latency.mean, 2)}x | ${fixed(e2.report.cacheHitRate, 2)} / ${fixed(rr.report.cacheHitRate, 2)} / ${fixed(ideal, 2)} | ${spread(e2)} / ${spread(rr)} | ${fixed(busy, 2)} | ${e2.preemptions} / ${rr.preemptions} | ${fixed(e2.report.meanOutputTokens, 0)} | ${ws} |`,
      );
    }
    // Poisson arrivals for 3H end a few seconds either side of it: 5% short still counts as 3H.
    const short = results.filter(
      (r) => r.cell.series === 'e2' && r.report.durationSeconds < 0.95 * 3 * WINDOW_SECONDS,
    );
    const e2Runs = results.filter((r) => r.cell.series === 'e2').length;
    lines.push(
      '',
      'The hit rates leave the warm-up out (see each panel) while the ideal counts the whole stream, cold',
      'misses included, so a policy can exceed it. Steady state: E2 keeps a window of H = 180 s, and',
      `every run lasts at least 3H of arrivals (at least the requests asked for, more where the rate needs them), the first H`,
      `left out as warm-up; ${short.length} of the ${e2Runs} E2 runs last less than 3H (${3 * WINDOW_SECONDS} s, less 5% for the Poisson arrivals' spread).`,
      '',
    );
    return lines.join('\n');
  },
};
