/** The shape of a llama-architecture model. */
export interface LlamaShape {
  embedding: number;
  layers: number;
  heads: number;
  kvHeads: number;
  feedForward: number;
  contextLength: number;
}

// Sizes from the real-backend research: tiny loads instantly, small prefills ~2k tokens in ~0.6 s
// on 2 threads, medium in ~2.3 s. A 32k training context leaves room for large -c values.
export const LLAMA_PRESETS = {
  tiny: { embedding: 128, layers: 2, heads: 4, kvHeads: 2, feedForward: 384, contextLength: 32768 },
  small: { embedding: 512, layers: 6, heads: 8, kvHeads: 4, feedForward: 1408, contextLength: 32768 },
  medium: { embedding: 1024, layers: 8, heads: 16, kvHeads: 4, feedForward: 2816, contextLength: 32768 },
} as const satisfies Record<string, LlamaShape>;

export type LlamaPresetName = keyof typeof LLAMA_PRESETS;

export function isLlamaPreset(name: string): name is LlamaPresetName {
  return Object.hasOwn(LLAMA_PRESETS, name);
}

export function llamaPreset(name: string): LlamaShape {
  if (!isLlamaPreset(name))
    throw new Error(`unknown model preset '${name}' (known: ${Object.keys(LLAMA_PRESETS).join(', ')})`);
  return LLAMA_PRESETS[name];
}
