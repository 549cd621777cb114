import type { CellResult } from './types.ts';

export interface Ratio {
  readonly panel: string;
  readonly rps: number;
  readonly series: string;
  /** Baseline over series: above 1 means the series is faster. */
  readonly meanLatency: number;
  readonly p99Latency: number;
}

/** Each series' latency ratios to the baseline series at the same panel and rate. */
export function ratiosTo(baseline: string, results: readonly CellResult[]): Ratio[] {
  const base = new Map<string, CellResult>();
  for (const r of results) if (r.cell.series === baseline) base.set(`${r.cell.panel}@${r.report.rps}`, r);
  const out: Ratio[] = [];
  for (const r of results) {
    if (r.cell.series === baseline) continue;
    const b = base.get(`${r.cell.panel}@${r.report.rps}`);
    if (b === undefined) continue;
    out.push({
      panel: r.cell.panel,
      rps: r.report.rps,
      series: r.cell.series,
      meanLatency: b.report.latency.mean / r.report.latency.mean,
      p99Latency: b.report.latency.p99 / r.report.latency.p99,
    });
  }
  return out;
}

export function range(values: readonly number[]): { min: number; max: number } {
  return { min: Math.min(...values), max: Math.max(...values) };
}
