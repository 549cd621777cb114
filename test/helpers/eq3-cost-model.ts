import type { BatchShape, CostModel } from '../../src/core/cost-model/types.ts';

/**
 * A cost model whose Aladdin Eq. 3 is exact: a decode step of b requests at mean context l takes
 * (1e-6·l + 1e-3)·b + 0.01 s, so Eq. 4's context limit at ATGT 50 ms is 40,000 - 1,000·b tokens.
 * A prefill of n tokens alone takes 0.011 + 1.01e-4·n - 1e-4 s (about 1 s for 10,000 tokens).
 */
export function eq3CostModel(kvCapacityTokens = Number.POSITIVE_INFINITY): CostModel {
  return {
    name: 'eq3',
    iterationTime: (b: BatchShape) =>
      0.01 + 0.001 * b.requests + 1e-6 * b.seqTokens + 1e-4 * (b.newTokens - b.requests),
    prefillTime: (n: number) => (n > 0 ? 0.011 + 1e-6 * n + 1e-4 * (n - 1) : 0),
    decodeTime: (k: number) => 0.011 * k,
    kvBytesPerToken: 1,
    kvCapacityTokens,
  };
}
