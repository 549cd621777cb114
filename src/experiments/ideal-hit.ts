import { RadixTree } from '../core/radix-tree.ts';
import type { WorkloadRequest } from '../workloads/types.ts';

const NO_DATA = { create: () => undefined, split: () => {} };

/**
 * The hit rate one infinitely large cache would reach on a stream: the share of prompt tokens that
 * repeat a prefix of an earlier prompt. No placement can beat it, so it shows each policy's headroom.
 */
export function idealHitRate(stream: Iterable<WorkloadRequest>): number {
  const tree = new RadixTree<undefined>(NO_DATA);
  let repeated = 0;
  let total = 0;
  for (const r of stream) {
    const m = tree.match(r.tokens);
    repeated += m.matched;
    total += r.tokens.length;
    tree.insertMatched(r.tokens, m);
  }
  return total > 0 ? repeated / total : 0;
}
