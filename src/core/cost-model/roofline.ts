import {
  DEFAULT_MEMORY_FRACTION,
  type Instance,
  type InstanceCostModel,
  instanceKvMemory,
  kvBytesPerToken,
} from './instance.ts';
import { type Line, sumMaxOfLines } from './series.ts';
import { type BatchShape, type GpuShape, type ModelShape, prefillByIteration } from './types.ts';

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

/** The hardware an iteration runs on: a model over `gpuCount` GPUs, in `pipelineStages` stages (default 1). */
export type Hardware = Pick<Instance, 'model' | 'gpu' | 'gpuCount' | 'pipelineStages'>;

/**
 * The memory-bandwidth floor of one iteration, in seconds: every weight and the KV of every sequence token
 * in the batch read once, at the GPUs' full datasheet bandwidth (summed over the tensor-parallel GPUs):
 * (params x bytes per param + KV bytes per token x seqTokens) / (bandwidth x gpuCount). No real engine is
 * faster; the roofline's memory arm is this divided by its bandwidth efficiency (plus the KV it writes).
 * With pipeline stages, every micro-batch reads its stage's weights (see the code).
 * Throws for a stand-in GPU without a bandwidth (the CPU preset's thread), where no such floor is known.
 */
export function memoryBandwidthFloor(hardware: Hardware, batch: BatchShape): number {
  const { model, gpu, gpuCount } = hardware;
  if (!(gpu.bandwidth > 0)) throw new Error(`${gpu.name} has no memory bandwidth, so no bandwidth floor`);
  const weights = model.params * model.bytesPerParam;
  const kv = kvBytesPerToken(model) * batch.seqTokens;
  const stages = hardware.pipelineStages ?? 1;
  if (stages === 1) return (weights + kv) / (gpu.bandwidth * gpuCount);
  // Pipeline stages: a stage serves one micro-batch at a time and each micro-batch reads the stage's
  // weights, so m = min(stages, requests) micro-batches take max(m, stages) passes of a stage holding
  // 1/stages of the weights and of a micro-batch's KV, on gpuCount / stages GPUs.
  const micro = Math.max(1, Math.min(stages, batch.requests));
  const pass = (weights + kv / micro) / stages / (gpu.bandwidth * (gpuCount / stages));
  return Math.max(micro, stages) * pass;
}

/** Attention FLOPs per (new token, context token) pair: QK^T and AV, 2 * hidden each, in every layer. */
export function attentionFlopsPerPair(model: ModelShape): number {
  return 4 * model.layers * model.hidden;
}

/**
 * Iteration time = max(FLOPs / (peak * MFU), bytes / (bandwidth * efficiency)) + overhead, where
 * FLOPs = 2 * params * new + 4 * layers * hidden * sum(new * seq) and bytes = weights + KV read for every
 * sequence token + KV written for every new token. A batch whose new tokens do not exceed its requests is
 * decode-only and uses the decode MFU.
 */
export function rooflineCostModel(options: RooflineOptions): InstanceCostModel {
  const { model, gpu } = options;
  const gpuCount = options.gpuCount ?? ROOFLINE_DEFAULTS.gpuCount;
  if (!Number.isInteger(gpuCount) || gpuCount < 1) throw new Error(`gpuCount must be >= 1, got ${gpuCount}`);
  const prefillMfu = options.prefillMfu ?? ROOFLINE_DEFAULTS.prefillMfu;
  const decodeMfu = options.decodeMfu ?? ROOFLINE_DEFAULTS.decodeMfu;
  const overhead = options.overheadSeconds ?? ROOFLINE_DEFAULTS.overheadSeconds;
  const bandwidth =
    gpu.bandwidth * gpuCount * (options.bandwidthEfficiency ?? ROOFLINE_DEFAULTS.bandwidthEfficiency);
  const instance: Instance = {
    model,
    gpu,
    gpuCount,
    memoryFraction: options.memoryFraction ?? DEFAULT_MEMORY_FRACTION,
  };
  const memory = instanceKvMemory(instance, options.kvCapacityTokens);
  const weightBytes = model.params * model.bytesPerParam;
  const pairFlops = attentionFlopsPerPair(model);
  const kvBytes = memory.kvBytesPerToken;

  const iterationTime = (batch: BatchShape): number => {
    if (batch.requests <= 0) return 0;
    const mfu = batch.newTokens <= batch.requests ? decodeMfu : prefillMfu;
    const flops = 2 * model.params * batch.newTokens + pairFlops * batch.newTimesSeq;
    const bytes = weightBytes + kvBytes * (batch.seqTokens + batch.newTokens);
    return Math.max(flops / (gpu.peakFlops * gpuCount * mfu), bytes / bandwidth) + overhead;
  };

  // One decode step at sequence length s: both roofline arms are lines in s.
  const decodeFlopRate = gpu.peakFlops * gpuCount * decodeMfu;
  const decodeCompute: Line = {
    intercept: overhead + (2 * model.params) / decodeFlopRate,
    slope: pairFlops / decodeFlopRate,
  };
  const decodeMemory: Line = {
    intercept: overhead + (weightBytes + kvBytes) / bandwidth,
    slope: kvBytes / bandwidth,
  };

  return {
    name: options.name ?? `roofline:${model.name}@${gpu.name}x${gpuCount}`,
    instance,
    kvBytesPerToken: memory.kvBytesPerToken,
    kvCapacityTokens: memory.kvCapacityTokens,
    iterationTime,
    prefillTime: prefillByIteration(iterationTime),
    decodeTime: (outputTokens, contextTokens) =>
      outputTokens <= 0
        ? 0
        : sumMaxOfLines(decodeCompute, decodeMemory, contextTokens + 1, contextTokens + outputTokens),
  };
}
