import type { GpuShape } from './types.ts';

const GIB = 2 ** 30;

/**
 * The GPU catalog: datasheet numbers. `peakFlops` is the dense fp16/bf16 tensor peak (half the datasheet's
 * "with sparsity" figure), `bandwidth` the HBM (or GDDR) bandwidth. Marketed memory sizes are read as GiB,
 * as BLIS's `MemoryGiB` does; nvidia-smi's totals are within 0.5% of these. `interconnectBandwidth` is
 * per direction per GPU: NVLink's marketed totals count both directions (A100 600 GB/s -> 300 GB/s), and
 * GPUs without NVLink (A6000 beyond a bridged pair, L4) talk over PCIe 4.0 x16 (32 GB/s each way).
 */
export const GPU_SHAPES = {
  a6000: {
    name: 'a6000',
    memoryBytes: 48 * GIB,
    peakFlops: 154.8e12,
    bandwidth: 768e9,
    interconnectBandwidth: 32e9,
    interconnect: 'PCIe 4.0 x16',
    source: 'NVIDIA RTX A6000 datasheet (309.7 TFLOPS tensor with sparsity, 768 GB/s, 48 GB GDDR6)',
  },
  'a100-40g': {
    name: 'a100-40g',
    memoryBytes: 40 * GIB,
    peakFlops: 312e12,
    bandwidth: 1.555e12,
    interconnectBandwidth: 300e9,
    interconnect: 'NVLink 3 (600 GB/s total)',
    source: 'NVIDIA A100 datasheet, SXM 40 GB (312 TFLOPS bf16 dense, 1,555 GB/s)',
  },
  'a100-80g': {
    name: 'a100-80g',
    memoryBytes: 80 * GIB,
    peakFlops: 312e12,
    bandwidth: 2.039e12,
    interconnectBandwidth: 300e9,
    interconnect: 'NVLink 3 (600 GB/s total)',
    source: 'NVIDIA A100 datasheet, SXM 80 GB (312 TFLOPS bf16 dense, 2,039 GB/s)',
  },
  'h100-80g': {
    name: 'h100-80g',
    memoryBytes: 80 * GIB,
    peakFlops: 989.5e12,
    bandwidth: 3.35e12,
    interconnectBandwidth: 450e9,
    interconnect: 'NVLink 4 (900 GB/s total)',
    source: 'NVIDIA H100 datasheet, SXM (989 TFLOPS bf16 dense, 3.35 TB/s)',
  },
  h200: {
    name: 'h200',
    memoryBytes: 141 * GIB,
    peakFlops: 989.5e12,
    bandwidth: 4.8e12,
    interconnectBandwidth: 450e9,
    interconnect: 'NVLink 4 (900 GB/s total)',
    source: 'NVIDIA H200 datasheet, SXM (989 TFLOPS bf16 dense, 4.8 TB/s, 141 GB)',
  },
  v100: {
    name: 'v100',
    memoryBytes: 32 * GIB,
    peakFlops: 125e12,
    bandwidth: 900e9,
    interconnectBandwidth: 150e9,
    interconnect: 'NVLink 2 (300 GB/s total)',
    source: 'NVIDIA V100 datasheet, SXM2 32 GB (125 TFLOPS fp16 tensor, 900 GB/s)',
  },
  l4: {
    name: 'l4',
    memoryBytes: 24 * GIB,
    peakFlops: 121e12,
    bandwidth: 300e9,
    interconnectBandwidth: 32e9,
    interconnect: 'PCIe 4.0 x16',
    source: 'NVIDIA L4 datasheet (242 TFLOPS fp16 tensor with sparsity, 300 GB/s, 24 GB GDDR6)',
  },
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
 * Prices and power. Splitwise (seed 004, paper 3, Table I, citing Azure's price list) gives a DGX-A100 at
 * $17.6/hr and a DGX-H100 at $38/hr, 8 GPUs each, so $2.20 and $4.75 per GPU-hour, and 400 W and 700 W per
 * GPU. The others are public list prices at a date, divided by the GPUs of the machine they come in (so the
 * host's CPU and memory are in them, as in Splitwise's): they differ by provider and change over time, so
 * compare GPUs priced from one source, and give `pricePerHour` in an instance spec to use your own.
 * Power is the board power of the datasheet named in GPU_SHAPES.
 */
export const GPU_ECONOMICS: Readonly<Record<GpuName, GpuEconomics>> = {
  a6000: {
    pricePerHour: 0.8,
    powerWatts: 300,
    source: 'Lambda Cloud on-demand list price, 1x RTX A6000 $0.80/hr (2024); 300 W (RTX A6000 datasheet)',
  },
  'a100-40g': {
    pricePerHour: 32.7726 / 8,
    powerWatts: 400,
    source: 'AWS EC2 on-demand list price, p4d.24xlarge (8x A100 40 GB) $32.7726/hr, us-east-1 (2024); 400 W',
  },
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
  h200: {
    pricePerHour: 43.26 / 8,
    powerWatts: 700,
    source:
      'AWS EC2 Capacity Blocks list price, 8x H200 $43.26/hr ($5.408 per GPU-hour), US East (Ohio), rates ' +
      'until 2025-01-01 (a reservation rate: AWS lists no comparable on-demand H200 price in our sources); 700 W',
  },
  v100: {
    pricePerHour: 31.212 / 8,
    powerWatts: 300,
    source: 'AWS EC2 on-demand list price, p3dn.24xlarge (8x V100 32 GB) $31.212/hr, us-east-1 (2024); 300 W',
  },
  l4: {
    pricePerHour: 0.8048,
    powerWatts: 72,
    source: 'AWS EC2 on-demand list price, g6.xlarge (1x L4) $0.8048/hr, us-east-1 (2024); 72 W',
  },
};
