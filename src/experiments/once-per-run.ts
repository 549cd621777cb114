import type { CellResult } from './types.ts';

/**
 * A computation over an experiment's results (searches that rerun its cells' setup), done once per set
 * of results: `claims`, `discuss` and `plots` all ask for it. It gets the run's request count and seed
 * from the first cell, so its own runs match the cells'.
 */
export function oncePerRun<T>(
  compute: (results: readonly CellResult[], run: { requests: number; seed: number }) => T,
): (results: readonly CellResult[]) => T {
  const memo = new WeakMap<readonly CellResult[], T>();
  return (results) => {
    const known = memo.get(results);
    if (known !== undefined) return known;
    const first = results[0];
    const value = compute(results, {
      requests: first?.report.requests ?? 0,
      seed: first?.cell.spec.seed ?? 0,
    });
    memo.set(results, value);
    return value;
  };
}
