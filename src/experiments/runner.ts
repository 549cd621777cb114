import { percentileOfSorted } from '../report/stats.ts';
import type { SimRecord } from '../sim/record.ts';
import { runSimulation } from '../sim/run.ts';
import { steadyLatency } from './paired-comparison.ts';
import type { Cell, CellResult } from './types.ts';

/** Run every cell in order (each a fresh policy and fresh engines); `onCell` reports progress. */
export function runCells(
  cells: readonly Cell[],
  onCell?: (done: number, total: number, cell: Cell) => void,
): CellResult[] {
  const results: CellResult[] = [];
  cells.forEach((cell, n) => {
    const { report, result } = runSimulation(cell.spec);
    const preemptions = result.engines.reduce((s, e) => s + e.preemptionsTotal, 0);
    results.push({
      cell,
      report,
      preemptions,
      p95: p95Of(result.records),
      // Kept only where the experiment pools or pairs runs (a cell with a repeat index): a grid of
      // millions of requests would otherwise hold every one.
      ...(cell.repeat === undefined
        ? {}
        : { steady: steadyLatency(result.records, cell.spec.warmupSeconds ?? 0) }),
    });
    onCell?.(n + 1, cells.length, cell);
  });
  return results;
}

/** The 95th percentiles of TTFT and latency over the completed requests (seed 002 reports p95). */
function p95Of(records: readonly SimRecord[]): { ttft: number; latency: number } {
  const done = records.filter((r) => r.finish >= 0);
  const sorted = (f: (r: SimRecord) => number) => Float64Array.from(done, f).sort();
  return {
    ttft: percentileOfSorted(
      sorted((r) => r.firstToken - r.arrival),
      0.95,
    ),
    latency: percentileOfSorted(
      sorted((r) => r.finish - r.arrival),
      0.95,
    ),
  };
}
