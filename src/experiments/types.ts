import type { Fleet } from '../core/fleet/fleet.ts';
import type { SimReport, SimSpec } from '../sim/run.ts';
import type { PlotRequest } from './report.ts';

/** One simulation of an experiment, and where it belongs in the report. */
export interface Cell {
  /** The panel: one workload on one cluster (a table and a plot each). */
  readonly panel: string;
  /** The series inside the panel: a policy or an ablation step. */
  readonly series: string;
  readonly spec: SimSpec;
  /**
   * Which run of the cell on its own seed (the experiment's seed + `repeat`), where the experiment
   * repeats its cells to pool them (`Experiment.defaultRepeats`); the report's tables and plots show
   * run 0 (absent: the cell's only run).
   */
  readonly repeat?: number;
}

export interface CellResult {
  readonly cell: Cell;
  readonly report: SimReport;
  /** Engine counters summed over instances. */
  readonly preemptions: number;
  /** 95th percentiles (nearest rank) over the completed requests, seconds: TTFT and end-to-end latency. */
  readonly p95?: { readonly ttft: number; readonly latency: number };
  /**
   * End-to-end latency (seconds) of each completed request that arrived after the warm-up, in the
   * run's record order, with its id: two runs of one stream pair request by request. Kept in memory
   * for cells with a `repeat` index only (the experiments that pool runs), not written to results.json.
   */
  readonly steady?: { readonly ids: readonly string[]; readonly latency: Float64Array };
}

export interface ExperimentOptions {
  /** Requests per simulation. */
  readonly requests: number;
  readonly seed: number;
  /** Runs of each cell, on seeds seed, seed + 1, ... (experiments with `defaultRepeats` only). */
  readonly repeats?: number;
  /** Restrict the series (policies or steps) to these. */
  readonly only?: readonly string[];
  /** Files the experiment may read (the Azure trace). */
  readonly azureTrace?: string;
  /** The Azure 2023 coding and conversation traces (splitwise; a stand-in where absent). */
  readonly azureCodeTrace?: string;
  readonly azureConvTrace?: string;
  /** A Mooncake-format trace (prefix-block hashes) for the policies grid's `mooncake` panel; none by default. */
  readonly mooncakeTrace?: string;
  /** A Qwen-Bailian trace (16-token block hashes) for the policies grid's `bailian` panel; none by default. */
  readonly bailianTrace?: string;
  /**
   * The policies grid on this fleet (`--fleet`: its instances, each with its own preset) in place of
   * its 4 and 8 Mistral-7B A6000s; `label` names it in the panels.
   */
  readonly fleet?: { readonly label: string; readonly fleet: Fleet };
}

/** One entry of `preble experiment NAME --json` (docs/design.md, "Experiments and their claims"). */
export interface Claim {
  /** Stable id within the experiment, e.g. `fig1-goodput`. */
  readonly id: string;
  /** The paper and where in it: `DistServe, Figure 1`. */
  readonly source: string;
  /** The direction the paper reports, in one sentence. */
  readonly statement: string;
  /** The paper's figure or numbers. */
  readonly paper: string;
  /** What this command's runs measured on the same question. */
  readonly measured: string;
  /** Whether the paper's direction holds here. */
  readonly holds: boolean;
}

export interface Experiment {
  readonly name: string;
  readonly title: string;
  /** Requests per simulation when `--requests` is not given: the size its committed report was made with. */
  readonly defaultRequests: number;
  /**
   * Runs of each cell on consecutive seeds when `--repeats` is not given (the committed report's run);
   * only an experiment that sets it pools repeated runs, the others refuse `--repeats`.
   */
  readonly defaultRepeats?: number;
  cells(options: ExperimentOptions): Cell[];
  /** Series renamed since a release: old name -> new name (`--only` refuses the old one with a hint). */
  readonly renamedSeries?: Readonly<Record<string, string>>;
  /**
   * Each panel's report states its working set (live shared-prefix tokens of the stream,
   * `workloads/working-set.ts`) against the fleet's KV capacity (instances x the preset's KV tokens).
   */
  readonly showWorkingSet?: boolean;
  /** Markdown body (after the generated tables and plots): the comparison with the paper. */
  discuss(results: readonly CellResult[]): string;
  /** The claims record, computed from the cells' results (and any search the experiment runs on them). */
  claims?(results: readonly CellResult[]): Claim[];
  /** Plots of its own beyond the per-panel ones (rendered beside them; `discuss` refers to them). */
  plots?(results: readonly CellResult[]): PlotRequest[];
}
