import type { ModelShape } from './types.ts';

/**
 * Shapes of the models the presets and the roofline know, from each model's Hugging Face config.json
 * (parameter counts are the exact safetensors totals). All fp16/bf16.
 */
export const MODEL_SHAPES = {
  'mistral-7b': {
    name: 'mistral-7b',
    params: 7_241_732_096,
    layers: 32,
    hidden: 4096,
    heads: 32,
    kvHeads: 8,
    headDim: 128,
    bytesPerParam: 2,
    bytesPerKv: 2,
  },
  'llama2-7b': {
    name: 'llama2-7b',
    params: 6_738_415_616,
    layers: 32,
    hidden: 4096,
    heads: 32,
    kvHeads: 32,
    headDim: 128,
    bytesPerParam: 2,
    bytesPerKv: 2,
  },
  // Llama-2-13B (meta-llama/Llama-2-13b-hf config.json): 40 layers, hidden 5120, 40 heads (no GQA),
  // MLP 13824, vocab 32000; params = 40 x (4 x 5120^2 + 3 x 5120 x 13824 + 2 x 5120) + 2 x 32000 x 5120 + 5120.
  // The 13B class of DistServe's Figure 1 (OPT-13B there; same layers, hidden and heads).
  'llama2-13b': {
    name: 'llama2-13b',
    params: 13_015_864_320,
    layers: 40,
    hidden: 5120,
    heads: 40,
    kvHeads: 40,
    headDim: 128,
    bytesPerParam: 2,
    bytesPerKv: 2,
  },
  'llama3-8b': {
    name: 'llama3-8b',
    params: 8_030_261_248,
    layers: 32,
    hidden: 4096,
    heads: 32,
    kvHeads: 8,
    headDim: 128,
    bytesPerParam: 2,
    bytesPerKv: 2,
  },
  'llama3-70b': {
    name: 'llama3-70b',
    params: 70_553_706_496,
    layers: 80,
    hidden: 8192,
    heads: 64,
    kvHeads: 8,
    headDim: 128,
    bytesPerParam: 2,
    bytesPerKv: 2,
  },
} as const satisfies Record<string, ModelShape>;

export type ModelName = keyof typeof MODEL_SHAPES;
