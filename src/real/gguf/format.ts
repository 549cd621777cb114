import { Q8_0_BLOCK, Q8_0_BYTES } from './q8_0.ts';

/** GGUF v3 constants (ggml docs/gguf.md). */
export const GGUF_MAGIC = 'GGUF';
export const GGUF_VERSION = 3;
export const GGUF_DEFAULT_ALIGNMENT = 32;

/** Metadata value types (gguf_metadata_value_type). */
export const GgufValueType = {
  uint8: 0,
  int8: 1,
  uint16: 2,
  int16: 3,
  uint32: 4,
  int32: 5,
  float32: 6,
  bool: 7,
  string: 8,
  array: 9,
  uint64: 10,
  int64: 11,
  float64: 12,
} as const;

export type GgufScalarType = Exclude<keyof typeof GgufValueType, 'array' | 'string' | 'bool'>;
export type GgufItemType = GgufScalarType | 'string' | 'bool';

/** A typed metadata value: the type is explicit because llama.cpp rejects a key of the wrong type. */
export type GgufValue =
  | { type: GgufScalarType; value: number }
  | { type: 'bool'; value: boolean }
  | { type: 'string'; value: string }
  | { type: 'array'; itemType: GgufItemType; value: readonly (number | string | boolean)[] };

/** The tensor types this writer produces (ggml_type ids) and their block layout. */
export const GgmlType = { f32: 0, f16: 1, q8_0: 8 } as const;
export type GgmlTypeName = keyof typeof GgmlType;

const LAYOUT: Record<GgmlTypeName, { blockValues: number; blockBytes: number }> = {
  f32: { blockValues: 1, blockBytes: 4 },
  f16: { blockValues: 1, blockBytes: 2 },
  q8_0: { blockValues: Q8_0_BLOCK, blockBytes: Q8_0_BYTES },
};

/** Bytes of a tensor with dims [ne0, ne1, ...] (ne0 is the contiguous one, and is split into blocks). */
export function tensorBytes(type: GgmlTypeName, dims: readonly number[]): number {
  const { blockValues, blockBytes } = LAYOUT[type];
  const ne0 = dims[0] ?? 1;
  if (ne0 % blockValues !== 0) throw new Error(`${type} needs a first dimension divisible by ${blockValues}`);
  const rows = dims.slice(1).reduce((a, b) => a * b, 1);
  return (ne0 / blockValues) * blockBytes * rows;
}

export function alignUp(offset: number, alignment: number): number {
  return offset + ((alignment - (offset % alignment)) % alignment);
}
