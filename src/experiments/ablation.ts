import { costModelPreset } from '../core/cost-model/presets.ts';
import type { PolicyOptions } from '../core/policies/registry.ts';
import type { QueuePolicyName } from '../core/replica-queue/registry.ts';
import { fixed } from '../report/text-table.ts';
import { createWorkload } from '../workloads/registry.ts';
import { ratiosTo } from './ratios.ts';
import type { Cell, CellResult, Experiment, ExperimentOptions } from './types.ts';
import { steadyRequests, warmupSeconds } from './warmup.ts';

interface Step {
  readonly series: string;
  readonly policy: string;
  readonly queuePolicy: QueuePolicyName;
  readonly options?: PolicyOptions<'e2'>;
}

const BASIC = { rebalance: false, prefixReplication: false, phaseMix: false } as const;

/** The paper's Figure 5 steps, each adding one mechanism to the one before. */
export const ABLATION_STEPS: readonly Step[] = [
  { series: 'round-robin', policy: 'round-robin', queuePolicy: 'lpm' },
  { series: 'E2 exploit/explore', policy: 'e2', queuePolicy: 'lpm', options: BASIC },
  {
    series: '+ rebalancing and prefix replication',
    policy: 'e2',
    queuePolicy: 'lpm',
    options: { ...BASIC, rebalance: true, prefixReplication: true },
  },
  { series: '+ phase-mix (prefill/decode) balancing', policy: 'e2', queuePolicy: 'lpm', options: {} },
  { series: '+ priority groups (Preble)', policy: 'e2', queuePolicy: 'priority-groups', options: {} },
];

/** Toolbench with the authors' Zipf-1.1 popularity (their `e2e_234r_toolbench_config.py`). */
export const ABLATION_WORKLOAD = 'toolbench:zipf=1.1';

/** Per-instance rates: Toolbench with Zipf-1.1 tool popularity on 4 Mistral-7B/A6000 instances. */
export const ABLATION_RATES_PER_INSTANCE = [2, 4, 6] as const;

export const ablation: Experiment = {
  name: 'ablation',
  defaultRequests: 4000,
  showWorkingSet: true,
  title: 'Ablation (paper, Figure 5): Toolbench with Zipf-1.1 tools on 4 instances, one mechanism at a time',
  renamedSeries: {
    '+ rebalancing, autoscaling': '+ rebalancing and prefix replication',
    '+ prefill/decode balancing': '+ phase-mix (prefill/decode) balancing',
  },
  cells(options: ExperimentOptions): Cell[] {
    const costModel = costModelPreset('mistral-7b-a6000');
    const instances = 4;
    const cells: Cell[] = [];
    for (const perInstance of ABLATION_RATES_PER_INSTANCE) {
      const rps = perInstance * instances;
      for (const step of ABLATION_STEPS) {
        if (options.only !== undefined && !options.only.includes(step.series)) continue;
        cells.push({
          panel: 'toolbench (Zipf 1.1, 500 tools per instance), 4 x Mistral-7B on A6000',
          series: step.series,
          spec: {
            policy: step.policy,
            workload: ABLATION_WORKLOAD,
            instances,
            rps,
            costModel,
            seed: options.seed,
            // At least three of E2's windows, the first left out as warm-up.
            warmupSeconds: warmupSeconds(steadyRequests(options.requests, rps), rps),
            queuePolicy: step.queuePolicy,
            ...(step.options === undefined ? {} : { policyOptions: step.options }),
            // The authors' Zipf config: 1000 tools per 2 GPUs, Zipf 1.1, scaled with the cluster.
            requests: () =>
              createWorkload(ABLATION_WORKLOAD, {
                requests: steadyRequests(options.requests, rps),
                rps,
                seed: options.seed,
                instances,
              }),
          },
        });
      }
    }
    return cells;
  },
  discuss(results: readonly CellResult[]): string {
    const lines = ['## Step by step', '', '| step | mean latency vs round robin (per rate) |', '|---|---|'];
    const ratios = ratiosTo('round-robin', results);
    for (const step of ABLATION_STEPS.slice(1)) {
      const mine = ratios.filter((r) => r.series === step.series).sort((a, b) => a.rps - b.rps);
      lines.push(
        `| ${step.series} | ${mine.map((r) => `${r.rps} rps: ${fixed(r.meanLatency, 2)}x`).join(', ')} |`,
      );
    }
    lines.push('');
    return lines.join('\n');
  },
};
