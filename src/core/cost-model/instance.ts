import type { CostModel, GpuShape, ModelShape } from './types.ts';

/**
 * One model instance: a model served over `gpuCount` identical GPUs, tensor-parallel unless `pipelineStages`
 * says how many of them are pipeline stages (gpuCount = tensor-parallel degree x stages).
 */
export interface Instance {
  readonly model: ModelShape;
  readonly gpu: GpuShape;
  readonly gpuCount: number;
  /** Pipeline stages (default 1); each stage holds layers / stages over gpuCount / stages GPUs. */
  readonly pipelineStages?: number;
  /** Share of GPU memory the engine may use for weights and KV (SGLang mem-fraction, vLLM gpu utilization). */
  readonly memoryFraction: number;
}

/** A cost model that knows the instance it describes. */
export type InstanceCostModel = CostModel & { readonly instance: Instance };

/** The memory half of a CostModel. */
export type KvMemory = Pick<CostModel, 'kvBytesPerToken' | 'kvCapacityTokens'>;

/** Preble's experiments run SGLang at mem-fraction 0.8 (multi_exp_utils.py). */
export const DEFAULT_MEMORY_FRACTION = 0.8;

/** K and V for every layer and KV head, for the whole instance (tensor parallelism splits it, not shrinks it). */
export function kvBytesPerToken(model: ModelShape): number {
  return 2 * model.layers * model.kvHeads * model.headDim * model.bytesPerKv;
}

/** Tokens of KV that fit beside the weights; 0 when the weights alone do not fit. */
export function kvCapacityTokens(instance: Instance): number {
  const usable = instance.gpu.memoryBytes * instance.gpuCount * instance.memoryFraction;
  const weights = instance.model.params * instance.model.bytesPerParam;
  return Math.max(0, Math.floor((usable - weights) / kvBytesPerToken(instance.model)));
}

/** The instance's KV memory, or the caller's capacity override; throws when the model does not fit. */
export function instanceKvMemory(instance: Instance, capacityOverride?: number): KvMemory {
  const bytes = kvBytesPerToken(instance.model);
  if (capacityOverride !== undefined) {
    if (!Number.isFinite(capacityOverride) || capacityOverride < 0) {
      throw new Error(`kvCapacityTokens must be a non-negative number, got ${capacityOverride}`);
    }
    return { kvBytesPerToken: bytes, kvCapacityTokens: Math.floor(capacityOverride) };
  }
  const capacity = kvCapacityTokens(instance);
  if (capacity <= 0) {
    const { model, gpu, gpuCount, memoryFraction } = instance;
    throw new Error(
      `${model.name} does not fit on ${gpuCount} x ${gpu.name} at memory fraction ${memoryFraction}: ` +
        'use more GPUs or a larger memory fraction',
    );
  }
  return { kvBytesPerToken: bytes, kvCapacityTokens: capacity };
}
