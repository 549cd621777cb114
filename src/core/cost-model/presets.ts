import { findGpu, findModel, gpuNamesWithAliases, modelNames } from './catalog.ts';
import { GPU_ALIASES, GPU_SHAPES } from './gpu-shapes.ts';
import {
  DEFAULT_MEMORY_FRACTION,
  type Instance,
  type InstanceCostModel,
  instanceKvMemory,
  type KvMemory,
  kvCapacityTokens,
} from './instance.ts';
import { linearCostModel } from './linear.ts';
import { LLAMA2_7B_H100_COEFFICIENTS } from './llama2-7b-h100.ts';
import { LLAMA3_70B_H100_GPU_COUNT, prebleLlama3H100CostModel } from './llama3-70b-h100.ts';
import {
  LLAMACPP_SMALL_CPU_COEFFICIENTS,
  LLAMACPP_SMALL_CPU_KV_TOKENS,
  LLAMACPP_SMALL_MODEL,
  llamaCppCpuCostModel,
  ONE_EPYC_THREAD,
} from './llamacpp-small-cpu.ts';
import { MODEL_SHAPES } from './model-shapes.ts';
import { parallelCostModel } from './parallel.ts';
import { prebleMistralA6000CostModel } from './preble-mistral-a6000.ts';
import type { CostModel } from './types.ts';

export interface PresetOverrides {
  /** Replaces the capacity that follows from memory (small memories for tests and experiments). */
  readonly kvCapacityTokens?: number;
  /** Share of GPU memory for weights and KV; default DEFAULT_MEMORY_FRACTION. */
  readonly memoryFraction?: number;
}

interface NamedPreset {
  /** One line for `--help`: the model, the hardware and where the numbers come from. */
  readonly summary: string;
  readonly instance: Omit<Instance, 'memoryFraction'>;
  readonly build: (memory: KvMemory) => CostModel;
  /** Fixed capacity (an engine's configured KV size) instead of what memory allows; overrides still win. */
  readonly kvCapacityTokens?: number;
}

/*
 * Capacity check: mistral-7b-a6000 at memory fraction 0.8 gives 204,072 tokens of 131,072 B, 2.8% above the
 * 198,516 the authors hard-code: SGLang also subtracts the memory it measures in use after loading (CUDA
 * context, activation and graph buffers, about 0.7 GiB here), which this model does not know.
 */
const NAMED_PRESETS: Readonly<Record<string, NamedPreset>> = {
  'mistral-7b-a6000': {
    summary: "Mistral-7B on one A6000, Preble's published fit (negative region made monotone)",
    instance: { model: MODEL_SHAPES['mistral-7b'], gpu: GPU_SHAPES.a6000, gpuCount: 1 },
    build: prebleMistralA6000CostModel,
  },
  'llama3-70b-h100': {
    summary: "Llama-3-70B on 4 H100 (TP 4), Preble's published fit for prefill, the roofline for decode",
    instance: {
      model: MODEL_SHAPES['llama3-70b'],
      gpu: GPU_SHAPES['h100-80g'],
      gpuCount: LLAMA3_70B_H100_GPU_COUNT,
    },
    build: prebleLlama3H100CostModel,
  },
  'llama2-7b-h100': {
    summary: "Llama-2-7B on one H100, hinge fit of vidur's profiling (scripts/fit-vidur.ts)",
    instance: { model: MODEL_SHAPES['llama2-7b'], gpu: GPU_SHAPES['h100-80g'], gpuCount: 1 },
    build: (memory) => linearCostModel('llama2-7b-h100', LLAMA2_7B_H100_COEFFICIENTS, memory),
  },
  'llamacpp-small-cpu': {
    summary: 'the generated small llama model in llama-server on one CPU thread, fitted from its timings',
    instance: { model: LLAMACPP_SMALL_MODEL, gpu: ONE_EPYC_THREAD, gpuCount: 1 },
    build: (memory) => llamaCppCpuCostModel('llamacpp-small-cpu', LLAMACPP_SMALL_CPU_COEFFICIENTS, memory),
    kvCapacityTokens: LLAMACPP_SMALL_CPU_KV_TOKENS,
  },
};

const ROOFLINE_NAME = /^roofline:([^@]+)@(.+?)(?:x(\d+))?(?:p(\d+))?$/;
const LISTED_GPU_COUNTS = [1, 2, 4, 8];
const SHORT_GPU_NAMES = new Map(Object.entries(GPU_ALIASES).map(([alias, gpu]) => [gpu as string, alias]));

/** The named presets, then one roofline name per model and GPU, with the fewest GPUs (of 1, 2, 4, 8) that fit. */
export function presetNames(): string[] {
  const names = Object.keys(NAMED_PRESETS);
  for (const model of Object.values(MODEL_SHAPES)) {
    for (const gpu of Object.values(GPU_SHAPES)) {
      const gpuCount = LISTED_GPU_COUNTS.find(
        (count) =>
          kvCapacityTokens({ model, gpu, gpuCount: count, memoryFraction: DEFAULT_MEMORY_FRACTION }) > 0,
      );
      if (gpuCount === undefined) continue;
      const gpuName = SHORT_GPU_NAMES.get(gpu.name) ?? gpu.name;
      names.push(`roofline:${model.name}@${gpuName}${gpuCount === 1 ? '' : `x${gpuCount}`}`);
    }
  }
  return names;
}

/** One line per named preset, then the roofline form, for `--help`. */
export function describeCostModelPresets(): string[] {
  return [
    ...Object.entries(NAMED_PRESETS).map(([name, preset]) => `${name}: ${preset.summary}`),
    `roofline:MODEL@GPU[xTP][pPP]: roofline from the model's shape and the GPU's over TP tensor-parallel GPUs (all-reduces per layer) in PP pipeline stages, e.g. roofline:opt-66b@a100-80gx4p2 (models: ${modelNames().join(', ')}; GPUs: ${gpuNamesWithAliases().join(', ')})`,
  ];
}

function unknownPreset(name: string): Error {
  return new Error(
    `unknown cost-model preset "${name}"; valid names: ${presetNames().join(', ')}. ` +
      `Roofline names are roofline:<model>@<gpu>[x<tensor-parallel GPUs>][p<pipeline stages>] with model ` +
      `one of ${modelNames().join(', ')} and gpu one of ${gpuNamesWithAliases().join(', ')}`,
  );
}

/**
 * A cost model by name: `mistral-7b-a6000`, `llama3-70b-h100`, `llama2-7b-h100`, `llamacpp-small-cpu`, or
 * `roofline:<model>@<gpu>[x<TP>][p<PP>]` (e.g. `roofline:llama3-8b@h100x1`, `roofline:opt-66b@a100-80gx4p2`:
 * parallelCostModel). Throws, listing the valid names, for anything else, and when the model does not fit.
 */
export function costModelPreset(name: string, overrides: PresetOverrides = {}): InstanceCostModel {
  const memoryFraction = overrides.memoryFraction ?? DEFAULT_MEMORY_FRACTION;
  if (!(memoryFraction > 0 && memoryFraction <= 1)) {
    throw new Error(`memoryFraction must be in (0, 1], got ${memoryFraction}`);
  }
  const named = Object.hasOwn(NAMED_PRESETS, name) ? NAMED_PRESETS[name] : undefined;
  if (named !== undefined) {
    const instance: Instance = { ...named.instance, memoryFraction };
    const capacity = overrides.kvCapacityTokens ?? named.kvCapacityTokens;
    return { ...named.build(instanceKvMemory(instance, capacity)), instance };
  }
  const match = ROOFLINE_NAME.exec(name);
  const model = match ? findModel(match[1]!) : undefined;
  const gpu = match ? findGpu(match[2]!) : undefined;
  const tp = match?.[3] === undefined ? 1 : Number(match[3]);
  const pp = match?.[4] === undefined ? 1 : Number(match[4]);
  if (model === undefined || gpu === undefined || tp < 1 || pp < 1) throw unknownPreset(name);
  return parallelCostModel({
    name,
    model,
    gpu,
    tp,
    pp,
    memoryFraction,
    kvCapacityTokens: overrides.kvCapacityTokens,
  });
}
