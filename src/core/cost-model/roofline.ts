import { type Instance, type InstanceCostModel, kvBytesPerToken } from './instance.ts';
import { parallelCostModel } from './parallel.ts';
import { ROOFLINE_DEFAULTS, type RooflineOptions } from './roofline-defaults.ts';
import type { BatchShape } from './types.ts';

export {
  attentionFlopsPerPair,
  ROOFLINE_DEFAULTS,
  type RooflineOptions,
} from './roofline-defaults.ts';

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

/**
 * Iteration time = max(FLOPs / (peak * MFU), bytes / (bandwidth * efficiency)) + overhead, where
 * FLOPs = 2 * params * new + 4 * layers * hidden * sum(new * seq) and bytes = weights + KV read for every
 * sequence token + KV written for every new token. A batch whose new tokens do not exceed its requests is
 * decode-only and uses the decode MFU. Over `gpuCount` GPUs FLOP/s, bandwidth and memory scale and
 * communication is free: parallelCostModel (parallel.ts) with tp = gpuCount and a free link, which
 * holds the arithmetic.
 */
export function rooflineCostModel(options: RooflineOptions): InstanceCostModel {
  const gpuCount = options.gpuCount ?? ROOFLINE_DEFAULTS.gpuCount;
  if (!Number.isInteger(gpuCount) || gpuCount < 1) throw new Error(`gpuCount must be >= 1, got ${gpuCount}`);
  const { gpuCount: _gpuCount, ...rest } = options;
  return parallelCostModel({
    ...rest,
    tp: gpuCount,
    interconnectBandwidth: Number.POSITIVE_INFINITY,
    commLatencySeconds: 0,
  });
}
