import { GPU_ALIASES, GPU_ECONOMICS, GPU_SHAPES, type GpuEconomics, type GpuName } from './gpu-shapes.ts';
import { MODEL_SHAPES, type ModelName } from './model-shapes.ts';
import type { GpuShape, ModelShape } from './types.ts';

/**
 * The one lookup into the model and GPU catalogs (model-shapes.ts, gpu-shapes.ts), for presets, fleets and
 * search: names as the catalogs spell them, GPUs also by alias (`h100`, `a100`).
 */

/** Model names of the catalog. */
export function modelNames(): ModelName[] {
  return Object.keys(MODEL_SHAPES) as ModelName[];
}

/** GPU names of the catalog, without aliases. */
export function gpuNames(): GpuName[] {
  return Object.keys(GPU_SHAPES) as GpuName[];
}

/** Every name a GPU may be given by: the catalog's, then the aliases. */
export function gpuNamesWithAliases(): string[] {
  return [...gpuNames(), ...Object.keys(GPU_ALIASES)];
}

/** The catalog's name for a GPU name or alias; undefined when unknown. */
export function canonicalGpuName(name: string): GpuName | undefined {
  if (Object.hasOwn(GPU_SHAPES, name)) return name as GpuName;
  return Object.hasOwn(GPU_ALIASES, name) ? GPU_ALIASES[name] : undefined;
}

export function findModel(name: string): ModelShape | undefined {
  return Object.hasOwn(MODEL_SHAPES, name) ? MODEL_SHAPES[name as ModelName] : undefined;
}

export function findGpu(name: string): GpuShape | undefined {
  const key = canonicalGpuName(name);
  return key === undefined ? undefined : GPU_SHAPES[key];
}

/** A model by name; throws naming the valid ones. */
export function modelShape(name: string): ModelShape {
  const model = findModel(name);
  if (model === undefined) throw new Error(`unknown model "${name}"; valid: ${modelNames().join(', ')}`);
  return model;
}

/** A GPU by name or alias; throws naming the valid ones. */
export function gpuShape(name: string): GpuShape {
  const gpu = findGpu(name);
  if (gpu === undefined) throw new Error(`unknown GPU "${name}"; valid: ${gpuNamesWithAliases().join(', ')}`);
  return gpu;
}

/** Price and power of a GPU (by name or alias); undefined for anything outside the catalog (the CPU stand-in). */
export function gpuEconomics(name: string): GpuEconomics | undefined {
  const key = canonicalGpuName(name);
  return key === undefined ? undefined : GPU_ECONOMICS[key];
}
