import type { GpuShape, ModelShape } from './types.ts';

export interface RooflineOptions {
  readonly model: ModelShape;
  readonly gpu: GpuShape;
  /** Tensor-parallel degree: FLOP/s, bandwidth and memory scale with it (communication is not modelled). */
  readonly gpuCount?: number;
  /** Model FLOPs utilization of batches with prefill work, and of decode-only batches. */
  readonly prefillMfu?: number;
  readonly decodeMfu?: number;
  /** Share of peak memory bandwidth actually reached. */
  readonly bandwidthEfficiency?: number;
  /** Seconds of per-iteration work outside the kernels (scheduling, sampling, input preparation). */
  readonly overheadSeconds?: number;
  readonly memoryFraction?: number;
  /** Overrides the capacity that follows from memory (tests and small experiments). */
  readonly kvCapacityTokens?: number;
  readonly name?: string;
}

/**
 * Defaults: MFU 0.45 / 0.30 as in BLIS's hardware_config.json. Bandwidth efficiency 0.7: vidur's H100
 * profile of Llama-2-7B reads the 12.95 GB of linear-layer weights in 5.63 ms at 1 token (2.3 TB/s, 69% of
 * peak), and BLIS's roofline v1 uses 0.72. Overhead 0.5 ms: a small per-step CPU cost.
 */
export const ROOFLINE_DEFAULTS = {
  gpuCount: 1,
  prefillMfu: 0.45,
  decodeMfu: 0.3,
  bandwidthEfficiency: 0.7,
  overheadSeconds: 0.5e-3,
} as const;

/** Attention FLOPs per (new token, context token) pair: QK^T and AV, 2 * hidden each, in every layer. */
export function attentionFlopsPerPair(model: ModelShape): number {
  return 4 * model.layers * model.hidden;
}
