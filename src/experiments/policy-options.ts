import { createGlobalPolicy } from '../core/policies/registry.ts';
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

/**
 * Build each named policy once, as its first cell would, before any simulation runs: an option its
 * constructor refuses (out of range, a bad combination) then fails at once rather than after every
 * cell ahead of it has run.
 */
export function buildEachOnce(cells: readonly Cell[], policies: Iterable<string>): void {
  for (const policy of policies) {
    const cell = cells.find((c) => c.spec.policy === policy);
    if (cell === undefined) continue;
    const { spec } = cell;
    createGlobalPolicy(spec.policy, { costModel: spec.costModel, seed: spec.seed }, spec.policyOptions);
  }
}
