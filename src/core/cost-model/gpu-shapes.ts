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

/** What a GPU costs to rent and draw, for cost and power per fleet. */
export interface GpuEconomics {
  /** Rental price of one GPU, US dollars per hour. */
  readonly pricePerHour: number;
  /** Board power (TDP), watts. */
  readonly powerWatts: number;
  readonly source: string;
}

/**
 * Prices and power where a source gives them. Splitwise (seed 004, paper 3, Table I, citing Azure's price
 * list) gives a DGX-A100 at $17.6/hr and a DGX-H100 at $38/hr, 8 GPUs each, so $2.20 and $4.75 per GPU-hour,
 * and 400 W and 700 W per GPU. The A6000 (300 W, NVIDIA RTX A6000 datasheet) and the H200 (up to 700 W,
 * NVIDIA H200 SXM datasheet) have no price in our sources: give `pricePerHour` in the instance spec.
 */
export const GPU_ECONOMICS: Readonly<Partial<Record<GpuName, GpuEconomics>>> = {
  'a100-80g': {
    pricePerHour: 17.6 / 8,
    powerWatts: 400,
    source: 'Splitwise Table I: DGX-A100 $17.6/hr for 8 GPUs (Azure), 400 W per GPU',
  },
  'h100-80g': {
    pricePerHour: 38 / 8,
    powerWatts: 700,
    source: 'Splitwise Table I: DGX-H100 $38/hr for 8 GPUs (Azure), 700 W per GPU',
  },
};
