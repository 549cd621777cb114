import type { LinearCoefficients } from './linear.ts';

/**
 * Llama-2-7B on one H100, fitted by `npx tsx scripts/fit-vidur.ts` (no arguments) from microsoft/vidur's
 * profile ../shared/data/vidur-profiling/h100/meta-llama/Llama-2-7b-hf/mlp.csv, rows with
 * num_tensor_parallel_workers = 1 (261 rows, num_tokens 1..4096), each taken as 32 x the summed mean
 * times of the per-layer non-attention ops (norms, QKV/O projections, rope, MLP, add):
 * - floor: the mean of the memory-bound rows (num_tokens <= 64), 5.74 ms: a decode step cannot be faster.
 * - a, b: least squares over the compute-bound rows (num_tokens >= 512), R^2 = 0.9945, max error 4.0 ms.
 *   The hinge max(floor, a + b n) is within 2% at 1 token and 5% at 4096; its worst error (33%) is in
 *   the transition around 100-200 tokens. A single line over all rows was 34% fast for decode steps.
 * - c, d: vidur's attention timings are Git LFS and not available, so from the roofline
 *   (ROOFLINE_DEFAULTS): c = KV bytes per token (524,288) / (3.35 TB/s x 0.7) for reading each context token,
 *   d = 4 x 32 layers x 4096 hidden FLOPs / (989.5 TFLOP/s x 0.45 MFU) per (new, context) token pair.
 * Excluded like vidur's model_time: embedding, LM head, sampling and CPU overheads.
 */
export const LLAMA2_7B_H100_COEFFICIENTS: LinearCoefficients = {
  a: 2.9003527391809813e-3,
  b: 2.0202312590379068e-5,
  c: 2.235769722814499e-7,
  d: 1.1774476447139407e-9,
  floor: 5.736727272727274e-3,
};
