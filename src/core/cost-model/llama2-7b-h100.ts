import type { LinearCoefficients } from './linear.ts';

/**
 * Llama-2-7B on one H100, fitted by `npx tsx scripts/fit-vidur.ts` (no arguments) from microsoft/vidur's
 * profile ../shared/data/vidur-profiling/h100/meta-llama/Llama-2-7b-hf/mlp.csv:
 * - a, b: least squares over the 261 rows with num_tensor_parallel_workers = 1 (num_tokens 1..4096) of
 *   32 x the summed mean times of the per-layer non-attention ops (norms, QKV/O projections, rope, MLP, add).
 *   R^2 = 0.9956; max error 4.29 ms (at 3328 tokens, of 74.1 ms); worst relative error 34% at 1 token,
 *   where the measured floor is 5.63 ms and the line gives 3.69 ms, so decode steps come out fast.
 * - c, d: vidur's attention timings are Git LFS and not available, so from the roofline
 *   (ROOFLINE_DEFAULTS): c = KV bytes per token (524,288) / (3.35 TB/s x 0.7) for reading each context token,
 *   d = 4 x 32 layers x 4096 hidden FLOPs / (989.5 TFLOP/s x 0.45 MFU) per (new, context) token pair.
 * Excluded like vidur's model_time: embedding, LM head, sampling and CPU overheads.
 */
export const LLAMA2_7B_H100_COEFFICIENTS: LinearCoefficients = {
  a: 3.6743347668270377e-3,
  b: 1.988534784185994e-5,
  c: 2.235769722814499e-7,
  d: 1.1774476447139407e-9,
};
