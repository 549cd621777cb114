import { existsSync } from 'node:fs';
import { costModelPreset } from '../core/cost-model/presets.ts';
import { globalPolicyNames } from '../core/policies/registry.ts';
import { fixed } from '../report/text-table.ts';
import { mixed } from '../workloads/mixed.ts';
import { traceArrivals } from '../workloads/traces/registry.ts';
import { withArrivals } from '../workloads/traces/with-arrivals.ts';
import type { Cell, CellResult, Experiment, ExperimentOptions } from './types.ts';
import { warmupSeconds } from './warmup.ts';

export const DEFAULT_AZURE_TRACE = '../shared/data/azure-llm-2023/AzureLLMInferenceTrace_conv.csv';

/** Mean rates per instance; the Azure pattern (its bursts and lulls) is kept, re-timed to each mean. */
export const AZURE_MIXED_RATES_PER_INSTANCE = [1, 2, 3] as const;

export const azureMixed: Experiment = {
  name: 'azure-mixed',
  defaultRequests: 3000,
  showWorkingSet: true,
  title:
    "Azure arrivals (paper, Figure 4): Toolbench and VideoQA mixed, with the Azure trace's arrival pattern, on 4 instances",
  cells(options: ExperimentOptions): Cell[] {
    const path = options.azureTrace ?? DEFAULT_AZURE_TRACE;
    if (!existsSync(path))
      throw new Error(`azure-mixed needs the Azure LLM trace: '${path}' not found (pass --azure FILE)`);
    const costModel = costModelPreset('mistral-7b-a6000');
    const instances = 4;
    const policies = globalPolicyNames.filter((p) => options.only === undefined || options.only.includes(p));
    const cells: Cell[] = [];
    for (const perInstance of AZURE_MIXED_RATES_PER_INSTANCE) {
      const rps = perInstance * instances;
      const arrivals = traceArrivals({ kind: 'azure', path }, { limit: options.requests, rps });
      const requests = () =>
        withArrivals(
          mixed({
            requests: options.requests,
            rps,
            seed: options.seed,
            instances,
            components: [{ name: 'toolbench' }, { name: 'video-qa' }],
          }),
          arrivals,
        );
      for (const policy of policies) {
        cells.push({
          panel: 'toolbench + video-qa on Azure arrivals, 4 x Mistral-7B on A6000',
          series: policy,
          spec: {
            policy,
            workload: 'mixed(toolbench, video-qa)@azure',
            instances,
            rps,
            costModel,
            seed: options.seed,
            warmupSeconds: warmupSeconds(options.requests, rps),
            requests,
          },
        });
      }
    }
    return cells;
  },
  discuss(results: readonly CellResult[]): string {
    const lines = [
      '## E2 against round robin on Azure arrivals',
      '',
      '| rps | mean latency | p99 latency | mean TTFT | p99 TTFT | mean TPOT |',
      '|---|---|---|---|---|---|',
    ];
    const rr = results.filter((r) => r.cell.series === 'round-robin');
    for (const e2 of results
      .filter((r) => r.cell.series === 'e2')
      .sort((a, b) => a.report.rps - b.report.rps)) {
      const b = rr.find((r) => r.report.rps === e2.report.rps);
      if (b === undefined) continue;
      const x = (f: (r: CellResult) => number) => `${fixed(f(b) / f(e2), 2)}x`;
      lines.push(
        `| ${e2.report.rps} | ${x((r) => r.report.latency.mean)} | ${x((r) => r.report.latency.p99)} | ${x((r) => r.report.ttft.mean)} | ${x((r) => r.report.ttft.p99)} | ${x((r) => r.report.tpot.mean)} |`,
      );
    }
    lines.push('', 'Each cell is round robin divided by E2 (above 1: E2 is faster).', '');
    return lines.join('\n');
  },
};
