/**
 * The Pareto front of a set of points under objectives to maximize: the points no other point beats
 * on every objective (at least as good on all, better on one). Pure; O(n²), fine for a search's few
 * hundred configurations.
 */

/** Whether `a` dominates `b`: at least as good on every objective and better on one. */
export function dominates(a: readonly number[], b: readonly number[]): boolean {
  let better = false;
  for (let i = 0; i < a.length; i++) {
    if (a[i]! < b[i]!) return false;
    if (a[i]! > b[i]!) better = true;
  }
  return better;
}

/**
 * The items whose objective vectors no other item dominates, in their input order. Items with equal
 * vectors are all kept. `objectives` maps an item to numbers to maximize (negate a cost).
 */
export function paretoFront<T>(items: readonly T[], objectives: (item: T) => readonly number[]): T[] {
  const vectors = items.map(objectives);
  return items.filter((_, i) => !vectors.some((other, j) => j !== i && dominates(other, vectors[i]!)));
}
