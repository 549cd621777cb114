import { open, rename, rm } from 'node:fs/promises';
import { ByteWriter } from './byte-writer.ts';
import {
  alignUp,
  GGUF_DEFAULT_ALIGNMENT,
  GGUF_MAGIC,
  GGUF_VERSION,
  GgmlType,
  type GgmlTypeName,
  type GgufValue,
  tensorBytes,
} from './format.ts';

export interface GgufTensor {
  /** At most 64 bytes (spec). */
  name: string;
  /** [ne0, ne1, ...]: ne0 is the contiguous dimension (a matrix's input size). */
  dims: readonly number[];
  type: GgmlTypeName;
  /** Produces the encoded data when its turn comes, so that only one tensor is in memory at a time. */
  data: () => Uint8Array;
}

export interface GgufContent {
  /** Metadata in file order; `general.alignment` is added by the writer. */
  metadata: readonly (readonly [string, GgufValue])[];
  tensors: readonly GgufTensor[];
  alignment?: number;
}

/** The header, metadata and tensor infos, padded so that tensor data starts aligned. */
export function encodeGgufHead(content: GgufContent): {
  head: Uint8Array;
  offsets: number[];
  dataBytes: number;
} {
  const alignment = content.alignment ?? GGUF_DEFAULT_ALIGNMENT;
  if (alignment % 8 !== 0) throw new Error(`GGUF alignment must be a multiple of 8, got ${alignment}`);
  if (content.metadata.some(([key]) => key === 'general.alignment'))
    throw new Error('general.alignment is written by the GGUF writer; pass `alignment` instead');

  const w = new ByteWriter();
  w.bytes(Buffer.from(GGUF_MAGIC, 'ascii'));
  w.u32(GGUF_VERSION);
  w.u64(content.tensors.length);
  w.u64(content.metadata.length + 1);
  for (const [key, value] of content.metadata) w.keyValue(key, value);
  w.keyValue('general.alignment', { type: 'uint32', value: alignment });

  const offsets: number[] = [];
  let offset = 0;
  for (const t of content.tensors) {
    if (Buffer.byteLength(t.name) > 64) throw new Error(`tensor name longer than 64 bytes: ${t.name}`);
    w.string(t.name);
    w.u32(t.dims.length);
    for (const d of t.dims) w.u64(d);
    w.u32(GgmlType[t.type]);
    w.u64(offset);
    offsets.push(offset);
    offset = alignUp(offset + tensorBytes(t.type, t.dims), alignment);
  }
  w.zeros(alignUp(w.length, alignment) - w.length);
  return { head: w.result(), offsets, dataBytes: offset };
}

/**
 * Write a GGUF v3 file, streaming tensor by tensor. It is written under a temporary name and renamed
 * at the end, so a crash never leaves a truncated file that looks complete. Returns the file size.
 */
export async function writeGguf(path: string, content: GgufContent): Promise<number> {
  const alignment = content.alignment ?? GGUF_DEFAULT_ALIGNMENT;
  const { head, dataBytes } = encodeGgufHead(content);
  const temp = `${path}.tmp-${process.pid}`;
  const file = await open(temp, 'w');
  try {
    await file.write(head);
    let written = 0;
    for (const t of content.tensors) {
      const expected = tensorBytes(t.type, t.dims);
      const data = t.data();
      if (data.length !== expected)
        throw new Error(`tensor ${t.name}: produced ${data.length} bytes, its shape needs ${expected}`);
      await file.write(data);
      const padding = alignUp(expected, alignment) - expected;
      if (padding > 0) await file.write(new Uint8Array(padding));
      written += expected + padding;
    }
    if (written !== dataBytes) throw new Error('GGUF writer: tensor data size mismatch');
    await file.close();
  } catch (error) {
    await file.close().catch(() => {});
    await rm(temp, { force: true });
    throw error;
  }
  await rename(temp, path);
  return head.length + dataBytes;
}
