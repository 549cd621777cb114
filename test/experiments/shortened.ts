import type { Cell } from '../../src/experiments/types.ts';

/**
 * A cell cut to its first `requests` requests with a 1 s warm-up: the Preble grids run at least three
 * 180 s windows of arrivals, too long for a unit test that only checks the report's shape.
 */
export function shortened(cell: Cell, requests: number): Cell {
  return {
    ...cell,
    spec: { ...cell.spec, warmupSeconds: 1, requests: () => [...cell.spec.requests()].slice(0, requests) },
  };
}
