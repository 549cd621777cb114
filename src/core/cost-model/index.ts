export {
  canonicalGpuName,
  findGpu,
  findModel,
  gpuEconomics,
  gpuNames,
  gpuNamesWithAliases,
  gpuShape,
  modelNames,
  modelShape,
} from './catalog.ts';
export { fitLine, type LineFit } from './fit-line.ts';
export { GPU_ALIASES, GPU_ECONOMICS, GPU_SHAPES, type GpuEconomics, type GpuName } from './gpu-shapes.ts';
export {
  DEFAULT_MEMORY_FRACTION,
  type Instance,
  type InstanceCostModel,
  instanceKvMemory,
  type KvMemory,
  kvBytesPerToken,
  kvCapacityTokens,
} from './instance.ts';
export { layerMatrixParams } from './layer-weights.ts';
export { type LinearCoefficients, linearCostModel } from './linear.ts';
export { LLAMA2_7B_H100_COEFFICIENTS } from './llama2-7b-h100.ts';
export {
  LLAMA3_70B_H100_COEFFICIENTS,
  LLAMA3_70B_H100_GPU_COUNT,
  prebleLlama3H100CostModel,
} from './llama3-70b-h100.ts';
export { MODEL_SHAPES, type ModelName } from './model-shapes.ts';
export { PARALLEL_DEFAULTS, type ParallelOptions, parallelCostModel } from './parallel.ts';
export { prebleMistralA6000CostModel } from './preble-mistral-a6000.ts';
export { type PrefillSaturationOptions, prefillSaturationTokens } from './prefill-saturation.ts';
export { costModelPreset, describeCostModelPresets, type PresetOverrides, presetNames } from './presets.ts';
export {
  attentionFlopsPerPair,
  type Hardware,
  memoryBandwidthFloor,
  ROOFLINE_DEFAULTS,
  type RooflineOptions,
  rooflineCostModel,
} from './roofline.ts';
export { type Line, sumLine, sumMaxOfLines } from './series.ts';
export * from './types.ts';
