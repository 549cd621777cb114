import type { GpuShape } from './types.ts';

const GIB = 2 ** 30;

/**
 * GPU datasheet numbers: dense fp16/bf16 tensor peak and memory bandwidth. Marketed memory sizes are read
 * as GiB, as BLIS's `MemoryGiB` does; nvidia-smi's totals are within 0.5% of these.
 */
export const GPU_SHAPES = {
  a6000: { name: 'a6000', memoryBytes: 48 * GIB, peakFlops: 154.8e12, bandwidth: 768e9 },
  'a100-80g': { name: 'a100-80g', memoryBytes: 80 * GIB, peakFlops: 312e12, bandwidth: 2.039e12 },
  'h100-80g': { name: 'h100-80g', memoryBytes: 80 * GIB, peakFlops: 989.5e12, bandwidth: 3.35e12 },
  h200: { name: 'h200', memoryBytes: 141 * GIB, peakFlops: 989.5e12, bandwidth: 4.8e12 },
} as const satisfies Record<string, GpuShape>;

export type GpuName = keyof typeof GPU_SHAPES;

/** Short names accepted wherever a GPU is named. */
export const GPU_ALIASES: Readonly<Record<string, GpuName>> = { a100: 'a100-80g', h100: 'h100-80g' };
