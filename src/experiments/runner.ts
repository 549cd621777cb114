import { runSimulation } from '../sim/run.ts';
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
    results.push({ cell, report, preemptions });
    onCell?.(n + 1, cells.length, cell);
  });
  return results;
}
