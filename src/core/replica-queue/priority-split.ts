/**
 * The arithmetic of Preble's priority groups (paper §3.3, Algorithm 3), kept apart from the policy
 * so that each rule can be tested on its own.
 */

export const defaultPriorityGroups = 10;

/**
 * Priority group of a request: `min(P - 1, floor(P * cached / prompt))`, 0-indexed, P - 1 the
 * highest. The paper's example: 63 of 100 tokens cached, P = 10 -> group 6; fully cached -> 9.
 * (The authors' code uses `ceil(10 * hit) - 1`, which differs only at exact multiples of 1/P.)
 * An empty prompt has no cached share and lands in group 0.
 */
export function priorityGroup(cachedTokens: number, promptTokens: number, groups: number): number {
  if (!(promptTokens > 0)) return 0;
  const cached = Math.min(promptTokens, Math.max(0, cachedTokens));
  // Multiply before dividing, so that e.g. 7 of 10 gives exactly 7, not 6.999...
  return Math.min(groups - 1, Math.floor((groups * cached) / promptTokens));
}

/**
 * How many of `total` batch places each group gets: in proportion to weight g + 1 for group g, so
 * of 55 places over 10 full groups the top group gets 10, the next 9, ..., group 0 gets 1. A group
 * never gets more than it holds (`groupSizes[g]`); what it cannot use goes to the others in the same
 * proportion. Rounding is by largest remainder, ties to the higher group. The counts sum to
 * `min(total, sum of sizes)`. O(P^2) for P groups.
 */
export function proportionalSplit(total: number, groupSizes: readonly number[]): number[] {
  const counts = groupSizes.map(() => 0);
  const open: number[] = [];
  let available = 0;
  for (let g = 0; g < groupSizes.length; g++) {
    const size = Math.max(0, Math.floor(groupSizes[g]!));
    if (size > 0) open.push(g);
    available += size;
  }
  let remaining = Math.max(0, Math.min(Math.floor(total), available));

  // Water-filling: a group whose share reaches its size takes all it has and leaves the rest to the
  // others. Saturating one group only raises the others' shares, so one pass may saturate several.
  let saturatedAny = true;
  while (saturatedAny && open.length > 0) {
    saturatedAny = false;
    const weight = sumWeights(open);
    const share = remaining;
    for (let k = open.length - 1; k >= 0; k--) {
      const g = open[k]!;
      const size = Math.floor(groupSizes[g]!);
      if (size * weight <= share * (g + 1)) {
        counts[g] = size;
        remaining -= size;
        open.splice(k, 1);
        saturatedAny = true;
      }
    }
  }
  if (open.length === 0) return counts;

  // No open group reaches its size: floor each share, then hand out the leftover places by largest
  // remainder. floor(share) + 1 <= size still holds, as share < size.
  const weight = sumWeights(open);
  let leftover = remaining;
  for (const g of open) {
    counts[g] = Math.floor((remaining * (g + 1)) / weight);
    leftover -= counts[g]!;
  }
  const byRemainder = [...open].sort((a, b) => {
    const diff = ((remaining * (b + 1)) % weight) - ((remaining * (a + 1)) % weight);
    return diff !== 0 ? diff : b - a;
  });
  for (let k = 0; k < leftover; k++) counts[byRemainder[k]!]!++;
  return counts;
}

function sumWeights(groups: readonly number[]): number {
  let weight = 0;
  for (const g of groups) weight += g + 1;
  return weight;
}

/**
 * The next group to take a request from so that every prefix of the batch keeps the quotas'
 * proportions (stride scheduling: group g's k-th pick sits at (k + 1/2) / quota_g; smallest first,
 * ties to the higher group). Returns -1 when every quota is used up. `taken` is the caller's count
 * of picks so far per group; this does not update it.
 */
export function nextGroupInMix(quotas: readonly number[], taken: ArrayLike<number>): number {
  let best = -1;
  for (let g = quotas.length - 1; g >= 0; g--) {
    const quota = quotas[g]!;
    const picks = taken[g]!;
    if (picks >= quota) continue;
    if (best < 0) {
      best = g;
      continue;
    }
    // Compare (2 picks + 1) / quota exactly, by cross-multiplying.
    if ((2 * picks + 1) * quotas[best]! < (2 * taken[best]! + 1) * quota) best = g;
  }
  return best;
}
