import { RadixTree } from '../core/radix-tree.ts';
import type { WorkloadRequest } from '../workloads/types.ts';

const NO_DATA = { create: () => undefined, split: () => {} };

/**
 * Each request of a stream with the prompt tokens one infinitely large cache, shared by the whole
 * fleet, would hold for it: the longest prefix of an earlier prompt. No placement caches more.
 */
export function* idealCached(
  stream: Iterable<WorkloadRequest>,
): Generator<{ readonly request: WorkloadRequest; readonly cached: number }> {
  const tree = new RadixTree<undefined>(NO_DATA);
  for (const request of stream) {
    const m = tree.match(request.tokens);
    yield { request, cached: m.matched };
    tree.insertMatched(request.tokens, m);
  }
}

/**
 * The hit rate one infinitely large cache would reach on a stream: the share of prompt tokens that
 * repeat a prefix of an earlier prompt. No placement can beat it, so it shows each policy's headroom.
 */
export function idealHitRate(stream: Iterable<WorkloadRequest>): number {
  let repeated = 0;
  let total = 0;
  for (const { request, cached } of idealCached(stream)) {
    repeated += cached;
    total += request.tokens.length;
  }
  return total > 0 ? repeated / total : 0;
}
