import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { GgufValue } from '../../src/real/gguf/format.ts';
import { type GgufContent, writeGguf } from '../../src/real/gguf/writer.ts';
import { parsedTensorBytes, parseGguf } from './gguf-reader.ts';

const dir = mkdtempSync(join(tmpdir(), 'preble-gguf-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const bytesOf = (values: Float32Array) => new Uint8Array(values.buffer);

describe('writeGguf', () => {
  it('round-trips every metadata type, tensor infos, offsets and alignment', async () => {
    const metadata: [string, GgufValue][] = [
      ['t.u8', { type: 'uint8', value: 200 }],
      ['t.i8', { type: 'int8', value: -100 }],
      ['t.u16', { type: 'uint16', value: 60000 }],
      ['t.i16', { type: 'int16', value: -30000 }],
      ['t.u32', { type: 'uint32', value: 4_000_000_000 }],
      ['t.i32', { type: 'int32', value: -2_000_000_000 }],
      ['t.f32', { type: 'float32', value: 0.5 }],
      ['t.u64', { type: 'uint64', value: 2 ** 40 }],
      ['t.i64', { type: 'int64', value: -(2 ** 40) }],
      ['t.f64', { type: 'float64', value: Math.PI }],
      ['t.bool', { type: 'bool', value: true }],
      ['t.string', { type: 'string', value: 'héllo ▁ world' }],
      ['t.strings', { type: 'array', itemType: 'string', value: ['a', '', '▁b'] }],
      ['t.ints', { type: 'array', itemType: 'int32', value: [1, -2, 3] }],
      ['t.floats', { type: 'array', itemType: 'float32', value: [0.25, -1] }],
      ['t.empty', { type: 'array', itemType: 'uint8', value: [] }],
    ];
    const content: GgufContent = {
      metadata,
      tensors: [
        { name: 'a', dims: [3], type: 'f32', data: () => bytesOf(Float32Array.of(1, 2, 3)) },
        { name: 'b', dims: [32, 2], type: 'q8_0', data: () => new Uint8Array(68).fill(1) },
        { name: 'c', dims: [5], type: 'f16', data: () => new Uint8Array(10).fill(2) },
      ],
    };
    const path = join(dir, 'types.gguf');
    const size = await writeGguf(path, content);
    const file = new Uint8Array(readFileSync(path));
    assert.equal(file.length, size);

    const parsed = parseGguf(file);
    assert.equal(parsed.version, 3);
    assert.equal(parsed.metadata.size, metadata.length + 1);
    assert.deepEqual(parsed.metadata.get('general.alignment'), { type: 4, value: 32 });
    for (const [key, v] of metadata) {
      const got = parsed.metadata.get(key)!;
      if (v.type === 'array') assert.deepEqual((got.value as { items: unknown[] }).items, v.value, key);
      else assert.equal(got.value, v.value, key);
    }
    assert.deepEqual(
      parsed.tensors.map((t) => [t.name, t.dims, t.type, t.offset]),
      [
        ['a', [3], 0, 0],
        ['b', [32, 2], 8, 32],
        ['c', [5], 1, 128],
      ],
    );
    assert.equal(parsed.dataStart % 32, 0);
    const last = parsed.tensors.at(-1)!;
    assert.equal(
      file.length,
      parsed.dataStart + Math.ceil((last.offset + parsedTensorBytes(last)) / 32) * 32,
    );
    const a = new Float32Array(file.slice(parsed.dataStart, parsed.dataStart + 12).buffer);
    assert.deepEqual([...a], [1, 2, 3]);
    assert.ok(file.subarray(parsed.dataStart + 12, parsed.dataStart + 32).every((b) => b === 0));
  });

  it('honours a larger alignment', async () => {
    const path = join(dir, 'aligned.gguf');
    await writeGguf(path, {
      metadata: [],
      alignment: 64,
      tensors: [
        { name: 'x', dims: [1], type: 'f32', data: () => bytesOf(Float32Array.of(7)) },
        { name: 'y', dims: [1], type: 'f32', data: () => bytesOf(Float32Array.of(8)) },
      ],
    });
    const parsed = parseGguf(new Uint8Array(readFileSync(path)));
    assert.equal(parsed.dataStart % 64, 0);
    assert.deepEqual(
      parsed.tensors.map((t) => t.offset),
      [0, 64],
    );
  });

  it('rejects data of the wrong size and leaves no file behind', async () => {
    const path = join(dir, 'bad.gguf');
    await assert.rejects(
      writeGguf(path, {
        metadata: [],
        tensors: [{ name: 'x', dims: [4], type: 'f32', data: () => new Uint8Array(8) }],
      }),
      /tensor x: produced 8 bytes, its shape needs 16/,
    );
    assert.equal(existsSync(path), false);
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.startsWith('bad')),
      [],
    );
  });

  it('rejects shapes Q8_0 cannot block', async () => {
    await assert.rejects(
      writeGguf(join(dir, 'q.gguf'), {
        metadata: [],
        tensors: [{ name: 'x', dims: [40, 2], type: 'q8_0', data: () => new Uint8Array(0) }],
      }),
      /divisible by 32/,
    );
  });
});
