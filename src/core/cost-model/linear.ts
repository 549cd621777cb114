import type { KvMemory } from './instance.ts';
import { sumLine } from './series.ts';
import { type BatchShape, type CostModel, prefillByIteration } from './types.ts';

/**
 * Seconds per iteration = max(floor, a + b * newTokens) + c * seqTokens + d * newTimesSeq: Preble's and
 * Vidur's form (a: fixed cost, b: linear layers per token, c: KV read per token of context, d: attention
 * per token pair). The optional floor is the memory-bound time of small batches: an iteration reads all
 * weights once however few tokens it computes, so below a few hundred tokens time stops falling.
 */
export interface LinearCoefficients {
  readonly a: number;
  readonly b: number;
  readonly c: number;
  readonly d: number;
  readonly floor?: number;
}

export function linearCostModel(name: string, coefficients: LinearCoefficients, memory: KvMemory): CostModel {
  const { a, b, c, d } = coefficients;
  const floor = coefficients.floor ?? 0;
  const iterationTime = (batch: BatchShape): number => {
    if (batch.requests <= 0) return 0;
    return Math.max(floor, a + b * batch.newTokens) + c * batch.seqTokens + d * batch.newTimesSeq;
  };
  return {
    name,
    kvBytesPerToken: memory.kvBytesPerToken,
    kvCapacityTokens: memory.kvCapacityTokens,
    iterationTime,
    prefillTime: prefillByIteration(iterationTime),
    // Step j (1-based) has new = 1 and seq = context + j, so its time is max(floor, a + b) + (c + d) * seq.
    decodeTime: (outputTokens, contextTokens) =>
      outputTokens <= 0
        ? 0
        : sumLine(
            { intercept: Math.max(floor, a + b), slope: c + d },
            contextTokens + 1,
            contextTokens + outputTokens,
          ),
  };
}
