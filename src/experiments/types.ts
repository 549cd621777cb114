import type { SimReport, SimSpec } from '../sim/run.ts';

/** One simulation of an experiment, and where it belongs in the report. */
export interface Cell {
  /** The panel: one workload on one cluster (a table and a plot each). */
  readonly panel: string;
  /** The series inside the panel: a policy or an ablation step. */
  readonly series: string;
  readonly spec: SimSpec;
}

export interface CellResult {
  readonly cell: Cell;
  readonly report: SimReport;
  /** Engine counters summed over instances. */
  readonly preemptions: number;
}

export interface ExperimentOptions {
  /** Requests per simulation. */
  readonly requests: number;
  readonly seed: number;
  /** Restrict the series (policies or steps) to these. */
  readonly only?: readonly string[];
  /** Files the experiment may read (the Azure trace). */
  readonly azureTrace?: string;
}

export interface Experiment {
  readonly name: string;
  readonly title: string;
  /** Requests per simulation when `--requests` is not given: the size its committed report was made with. */
  readonly defaultRequests: number;
  cells(options: ExperimentOptions): Cell[];
  /** Series renamed since a release: old name -> new name (`--only` refuses the old one with a hint). */
  readonly renamedSeries?: Readonly<Record<string, string>>;
  /** Markdown body (after the generated tables and plots): the comparison with the paper. */
  discuss(results: readonly CellResult[]): string;
}
