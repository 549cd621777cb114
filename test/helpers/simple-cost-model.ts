import type { BatchShape, CostModel } from '../../src/core/cost-model/types.ts';

/**
 * A cost model simple enough to compute costs by hand in tests: prefill 1 ms per new token
 * (context ignored), decode 10 ms per token.
 */
export function simpleCostModel(kvCapacityTokens = Number.POSITIVE_INFINITY): CostModel {
  return {
    name: 'simple',
    iterationTime: (b: BatchShape) => 0.001 * b.newTokens,
    prefillTime: (n: number) => (n > 0 ? 0.001 * n : 0),
    decodeTime: (k: number) => 0.01 * k,
    kvBytesPerToken: 1,
    kvCapacityTokens,
  };
}

/** Tokens from a compact spec: seq(100, 7) is 100 tokens starting at id 7 (7, 8, 9, ...). */
export function seq(length: number, start: number): Uint32Array {
  const t = new Uint32Array(length);
  for (let i = 0; i < length; i++) t[i] = start + i;
  return t;
}

export function concat(...parts: Uint32Array[]): Uint32Array {
  const out = new Uint32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
