import type { CostModel } from './types.ts';

/** How `prefillSaturationTokens` reads the cost model. */
export interface PrefillSaturationOptions {
  /** Within this share of the lowest prefill time per token counts as saturated. Default 0.05. */
  readonly tolerance?: number;
  /** The longest prefill examined. Default 16,384 tokens. */
  readonly maxTokens?: number;
}

/**
 * DistServe's L_m (OSDI'24 §4.3; /work/shared/research/seed-distserve-vidur.md): the prompt-token count
 * past which a prefill is compute bound, so that batching more prefills with it stops paying. DistServe
 * profiles it (512 tokens saturate an A100 for a 13B model); we read it off the cost model: the smallest
 * n <= `maxTokens` whose prefill time per token, prefillTime(n, 0) / n, is within `tolerance` of the
 * lowest per-token time over 1..`maxTokens`. Below it a prefill's fixed costs (reading the weights,
 * per-iteration overhead) are not yet amortized; the lowest per-token time is the asymptote of the
 * linear part before the attention term, quadratic in n, raises it again. On a roofline model it sits
 * near the ridge point (peak FLOP/s / bandwidth tokens, ~150 on an A100), below DistServe's measured
 * 512: real kernels saturate later than the roofline's ideal.
 */
export function prefillSaturationTokens(
  costModel: CostModel,
  options: PrefillSaturationOptions = {},
): number {
  const tolerance = options.tolerance ?? 0.05;
  const maxTokens = options.maxTokens ?? 16_384;
  const perToken = new Float64Array(maxTokens + 1);
  let lowest = Number.POSITIVE_INFINITY;
  for (let n = 1; n <= maxTokens; n++) {
    perToken[n] = costModel.prefillTime(n, 0) / n;
    if (perToken[n]! < lowest) lowest = perToken[n]!;
  }
  let n = 1;
  while (perToken[n]! > lowest * (1 + tolerance)) n++;
  return n;
}
