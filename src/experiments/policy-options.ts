import type { Cell } from './types.ts';

/**
 * The cells with `--policy-option` values laid over each cell's own options for its policy (an
 * ablation step's, say): a variant of a committed report without editing a default.
 */
export function withPolicyOptions(
  cells: readonly Cell[],
  byPolicy: ReadonlyMap<string, Readonly<Record<string, unknown>>>,
): Cell[] {
  return cells.map((cell) => {
    const options = byPolicy.get(cell.spec.policy);
    if (options === undefined) return cell;
    return { ...cell, spec: { ...cell.spec, policyOptions: { ...cell.spec.policyOptions, ...options } } };
  });
}
