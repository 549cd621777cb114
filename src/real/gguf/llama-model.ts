import { Random } from '../../core/random.ts';
import type { GgufValue } from './format.ts';
import { type LlamaPresetName, type LlamaShape, llamaPreset } from './presets.ts';
import { quantizeQ8_0 } from './q8_0.ts';
import { BOS_ID, characterVocabulary, EOS_ID, UNK_ID } from './vocab.ts';
import { type GgufTensor, writeGguf } from './writer.ts';

export interface WriteGgufModelOptions {
  preset: LlamaPresetName | LlamaShape;
  seed: number;
  path: string;
}

export interface GgufModelInfo {
  path: string;
  bytes: number;
  parameters: number;
}

const u32 = (value: number): GgufValue => ({ type: 'uint32', value });
const f32 = (value: number): GgufValue => ({ type: 'float32', value });

function llamaMetadata(shape: LlamaShape, name: string): [string, GgufValue][] {
  const vocab = characterVocabulary();
  return [
    ['general.architecture', { type: 'string', value: 'llama' }],
    ['general.name', { type: 'string', value: name }],
    ['general.file_type', u32(7)], // MOSTLY_Q8_0
    ['general.quantization_version', u32(2)],
    ['llama.vocab_size', u32(vocab.tokens.length)],
    ['llama.context_length', u32(shape.contextLength)],
    ['llama.embedding_length', u32(shape.embedding)],
    ['llama.block_count', u32(shape.layers)],
    ['llama.feed_forward_length', u32(shape.feedForward)],
    ['llama.rope.dimension_count', u32(shape.embedding / shape.heads)],
    ['llama.rope.freq_base', f32(10000)],
    ['llama.attention.head_count', u32(shape.heads)],
    ['llama.attention.head_count_kv', u32(shape.kvHeads)],
    ['llama.attention.layer_norm_rms_epsilon', f32(1e-5)],
    ['tokenizer.ggml.model', { type: 'string', value: 'llama' }],
    ['tokenizer.ggml.tokens', { type: 'array', itemType: 'string', value: vocab.tokens }],
    ['tokenizer.ggml.scores', { type: 'array', itemType: 'float32', value: vocab.scores }],
    ['tokenizer.ggml.token_type', { type: 'array', itemType: 'int32', value: vocab.types }],
    ['tokenizer.ggml.bos_token_id', u32(BOS_ID)],
    ['tokenizer.ggml.eos_token_id', u32(EOS_ID)],
    ['tokenizer.ggml.unknown_token_id', u32(UNK_ID)],
    ['tokenizer.ggml.add_bos_token', { type: 'bool', value: true }],
    ['tokenizer.ggml.add_eos_token', { type: 'bool', value: false }],
    // No leading ▁ before the text: a prompt of n characters is exactly n tokens (+ BOS).
    ['tokenizer.ggml.add_space_prefix', { type: 'bool', value: false }],
  ];
}

/** A Q8_0 matrix [fanIn, fanOut] uniform in ±sqrt(3/fanIn): variance 1/fanIn keeps activations finite. */
function randomMatrix(name: string, fanIn: number, fanOut: number, random: Random): GgufTensor {
  return {
    name,
    dims: [fanIn, fanOut],
    type: 'q8_0',
    data: () => {
      const values = new Float32Array(fanIn * fanOut);
      const bound = Math.sqrt(3 / fanIn);
      for (let i = 0; i < values.length; i++) values[i] = (2 * random.next() - 1) * bound;
      return quantizeQ8_0(values);
    },
  };
}

/** RMSNorm weights start at 1 (f32: llama.cpp keeps norms unquantized). */
function onesVector(name: string, size: number): GgufTensor {
  return {
    name,
    dims: [size],
    type: 'f32',
    data: () => new Uint8Array(new Float32Array(size).fill(1).buffer),
  };
}

function llamaTensors(shape: LlamaShape, vocabSize: number, seed: number): GgufTensor[] {
  const master = new Random(seed);
  // One independent stream per tensor, drawn up front, so no tensor's draws depend on another's size.
  const matrix = (name: string, fanIn: number, fanOut: number) =>
    randomMatrix(name, fanIn, fanOut, master.fork());
  const d = shape.embedding;
  const kvDim = (d / shape.heads) * shape.kvHeads;
  const tensors = [matrix('token_embd.weight', d, vocabSize)];
  for (let l = 0; l < shape.layers; l++) {
    const p = `blk.${l}`;
    tensors.push(
      onesVector(`${p}.attn_norm.weight`, d),
      matrix(`${p}.attn_q.weight`, d, d),
      matrix(`${p}.attn_k.weight`, d, kvDim),
      matrix(`${p}.attn_v.weight`, d, kvDim),
      matrix(`${p}.attn_output.weight`, d, d),
      onesVector(`${p}.ffn_norm.weight`, d),
      matrix(`${p}.ffn_gate.weight`, d, shape.feedForward),
      matrix(`${p}.ffn_up.weight`, d, shape.feedForward),
      matrix(`${p}.ffn_down.weight`, shape.feedForward, d),
    );
  }
  tensors.push(onesVector('output_norm.weight', d), matrix('output.weight', d, vocabSize));
  return tensors;
}

function checkShape(shape: LlamaShape): void {
  if (shape.embedding % shape.heads !== 0) throw new Error('embedding must be divisible by heads');
  if (shape.heads % shape.kvHeads !== 0) throw new Error('heads must be divisible by kvHeads');
  if ((shape.embedding / shape.heads) % 2 !== 0) throw new Error('head size must be even (RoPE)');
  if (shape.embedding % 32 !== 0 || shape.feedForward % 32 !== 0)
    throw new Error('embedding and feedForward must be multiples of 32 (Q8_0 blocks)');
}

/**
 * Write a llama-architecture GGUF with random Q8_0 weights and a character-level SPM vocabulary.
 * The same preset and seed give a byte-identical file.
 */
export async function writeGgufModel(options: WriteGgufModelOptions): Promise<GgufModelInfo> {
  const shape = typeof options.preset === 'string' ? llamaPreset(options.preset) : options.preset;
  checkShape(shape);
  const name = `preble-random-${typeof options.preset === 'string' ? options.preset : 'custom'}-seed${options.seed}`;
  const vocabSize = characterVocabulary().tokens.length;
  const tensors = llamaTensors(shape, vocabSize, options.seed);
  const bytes = await writeGguf(options.path, { metadata: llamaMetadata(shape, name), tensors });
  const parameters = tensors.reduce((sum, t) => sum + t.dims.reduce((a, b) => a * b, 1), 0);
  return { path: options.path, bytes, parameters };
}
