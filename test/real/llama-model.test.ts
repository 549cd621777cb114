import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { writeGgufModel } from '../../src/real/gguf/llama-model.ts';
import { LLAMA_PRESETS } from '../../src/real/gguf/presets.ts';
import { dequantizeQ8_0 } from '../../src/real/gguf/q8_0.ts';
import { BOS_ID, EOS_ID, SPM_SPACE, TokenType, UNK_ID } from '../../src/real/gguf/vocab.ts';
import { meta, type ParsedGguf, parsedTensorBytes, parseGguf } from './gguf-reader.ts';

const dir = mkdtempSync(join(tmpdir(), 'preble-model-'));
after(() => rmSync(dir, { recursive: true, force: true }));

async function model(seed: number, name: string): Promise<Uint8Array> {
  const path = join(dir, name);
  await writeGgufModel({ preset: 'tiny', seed, path });
  return new Uint8Array(readFileSync(path));
}

const items = (parsed: ParsedGguf, key: string) => (meta(parsed, key).value as { items: unknown[] }).items;

describe('writeGgufModel (tiny)', () => {
  let file: Uint8Array;
  let parsed: ParsedGguf;
  before(async () => {
    file = await model(0, 'tiny-0.gguf');
    parsed = parseGguf(file);
  });

  it('writes the llama hyperparameters with the types llama.cpp expects', () => {
    const t = LLAMA_PRESETS.tiny;
    const u32 = (key: string, value: number) => assert.deepEqual(meta(parsed, key), { type: 4, value }, key);
    assert.equal(parsed.version, 3);
    assert.equal(meta(parsed, 'general.architecture').value, 'llama');
    u32('general.alignment', 32);
    u32('general.quantization_version', 2);
    u32('llama.context_length', t.contextLength);
    u32('llama.embedding_length', 128);
    u32('llama.block_count', 2);
    u32('llama.feed_forward_length', 384);
    u32('llama.attention.head_count', 4);
    u32('llama.attention.head_count_kv', 2);
    u32('llama.rope.dimension_count', 32);
    assert.ok(t.contextLength >= 8192);
    assert.equal(meta(parsed, 'llama.attention.layer_norm_rms_epsilon').type, 6);
    assert.equal(meta(parsed, 'llama.rope.freq_base').type, 6);
  });

  it('lays out every tensor aligned, in order, with the file ending after the last one', () => {
    assert.equal(parsed.tensors.length, 1 + 9 * 2 + 2);
    let end = 0;
    for (const t of parsed.tensors) {
      assert.equal(t.offset % 32, 0, t.name);
      assert.ok(t.offset >= end, `${t.name} overlaps the tensor before it`);
      end = t.offset + parsedTensorBytes(t);
    }
    assert.equal(parsed.dataStart % 32, 0);
    assert.equal(file.length, parsed.dataStart + Math.ceil(end / 32) * 32);
  });

  it('has the llama tensor names and shapes, Q8_0 matrices and f32 norms', () => {
    const shapes = new Map(parsed.tensors.map((t) => [t.name, [t.dims, t.type]]));
    const vocab = items(parsed, 'tokenizer.ggml.tokens').length;
    assert.deepEqual(shapes.get('token_embd.weight'), [[128, vocab], 8]);
    assert.deepEqual(shapes.get('output.weight'), [[128, vocab], 8]);
    assert.deepEqual(shapes.get('output_norm.weight'), [[128], 0]);
    for (const l of [0, 1]) {
      assert.deepEqual(shapes.get(`blk.${l}.attn_norm.weight`), [[128], 0]);
      assert.deepEqual(shapes.get(`blk.${l}.attn_q.weight`), [[128, 128], 8]);
      assert.deepEqual(shapes.get(`blk.${l}.attn_k.weight`), [[128, 64], 8]); // 2 KV heads of 32
      assert.deepEqual(shapes.get(`blk.${l}.attn_v.weight`), [[128, 64], 8]);
      assert.deepEqual(shapes.get(`blk.${l}.attn_output.weight`), [[128, 128], 8]);
      assert.deepEqual(shapes.get(`blk.${l}.ffn_norm.weight`), [[128], 0]);
      assert.deepEqual(shapes.get(`blk.${l}.ffn_gate.weight`), [[128, 384], 8]);
      assert.deepEqual(shapes.get(`blk.${l}.ffn_up.weight`), [[128, 384], 8]);
      assert.deepEqual(shapes.get(`blk.${l}.ffn_down.weight`), [[384, 128], 8]);
    }
  });

  it('scales weights by 1/sqrt(fan_in) and sets norms to 1', () => {
    const tensor = (name: string) => {
      const t = parsed.tensors.find((x) => x.name === name)!;
      const start = parsed.dataStart + t.offset;
      return { t, data: file.subarray(start, start + parsedTensorBytes(t)) };
    };
    const down = tensor('blk.1.ffn_down.weight');
    const values = dequantizeQ8_0(down.data);
    const bound = Math.sqrt(3 / 384);
    const variance = values.reduce((s, v) => s + v * v, 0) / values.length;
    assert.ok(values.every((v) => Math.abs(v) <= bound * 1.001));
    assert.ok(Math.abs(variance * 384 - 1) < 0.05, `variance x fan_in = ${variance * 384}`);
    const norm = tensor('blk.0.attn_norm.weight');
    assert.ok(new Float32Array(norm.data.slice().buffer).every((v) => v === 1));
  });

  it('has a character-level SPM vocabulary with byte fallback', () => {
    assert.equal(meta(parsed, 'tokenizer.ggml.model').value, 'llama');
    const tokens = items(parsed, 'tokenizer.ggml.tokens') as string[];
    const types = items(parsed, 'tokenizer.ggml.token_type') as number[];
    const scores = items(parsed, 'tokenizer.ggml.scores') as number[];
    assert.equal((meta(parsed, 'tokenizer.ggml.token_type').value as { itemType: number }).itemType, 5); // int32
    assert.equal(types.length, tokens.length);
    assert.equal(scores.length, tokens.length);
    assert.equal(tokens.length, 3 + 256 + 95);
    assert.equal(new Set(tokens).size, tokens.length);

    assert.equal(meta(parsed, 'tokenizer.ggml.bos_token_id').value, BOS_ID);
    assert.equal(meta(parsed, 'tokenizer.ggml.eos_token_id').value, EOS_ID);
    assert.equal(meta(parsed, 'tokenizer.ggml.unknown_token_id').value, UNK_ID);
    assert.deepEqual([tokens[UNK_ID], tokens[BOS_ID], tokens[EOS_ID]], ['<unk>', '<s>', '</s>']);
    assert.deepEqual(
      [types[UNK_ID], types[BOS_ID], types[EOS_ID]],
      [TokenType.unknown, TokenType.control, TokenType.control],
    );
    assert.equal(meta(parsed, 'tokenizer.ggml.add_bos_token').value, true);
    assert.equal(meta(parsed, 'tokenizer.ggml.add_space_prefix').value, false);

    for (let b = 0; b < 256; b++) {
      const id = tokens.indexOf(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
      assert.ok(id >= 0, `byte ${b}`);
      assert.equal(types[id], TokenType.byte);
    }
    for (let c = 0x21; c <= 0x7e; c++) {
      const id = tokens.indexOf(String.fromCharCode(c));
      assert.ok(id >= 0, `char ${String.fromCharCode(c)}`);
      assert.equal(types[id], TokenType.normal);
    }
    assert.equal(types[tokens.indexOf(SPM_SPACE)], TokenType.normal);
    assert.equal(tokens.indexOf(' '), -1); // SPM spells the space ▁
    // Nothing longer than one character (besides the specials and byte tokens): no merges possible.
    assert.ok(tokens.every((t, i) => types[i] !== TokenType.normal || [...t].length === 1));
  });
});

describe('writeGgufModel determinism', () => {
  it('gives byte-identical files for the same seed and different ones for another seed', async () => {
    const a = await model(7, 'a.gguf');
    const b = await model(7, 'b.gguf');
    const c = await model(8, 'c.gguf');
    assert.ok(Buffer.from(a).equals(Buffer.from(b)));
    assert.equal(a.length, c.length);
    const pa = parseGguf(a);
    const pc = parseGguf(c);
    const embd = (p: ParsedGguf, f: Uint8Array) => {
      const t = p.tensors[0]!;
      return Buffer.from(f.subarray(p.dataStart + t.offset, p.dataStart + t.offset + parsedTensorBytes(t)));
    };
    assert.ok(!embd(pa, a).equals(embd(pc, c)), 'the weights themselves differ');
  });

  it('accepts a custom shape and rejects one llama.cpp could not load', async () => {
    const shape = { embedding: 64, layers: 1, heads: 2, kvHeads: 1, feedForward: 96, contextLength: 8192 };
    const info = await writeGgufModel({ preset: shape, seed: 1, path: join(dir, 'custom.gguf') });
    assert.ok(info.parameters > 0);
    await assert.rejects(
      writeGgufModel({ preset: { ...shape, kvHeads: 3 }, seed: 1, path: join(dir, 'x.gguf') }),
      /divisible by kvHeads/,
    );
    await assert.rejects(
      writeGgufModel({ preset: 'huge' as 'tiny', seed: 1, path: join(dir, 'y.gguf') }),
      /unknown model preset 'huge'/,
    );
  });
});
