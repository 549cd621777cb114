import { f16BitsToF32, f32ToF16Bits } from './f16.ts';

/** Values per Q8_0 block, and bytes per block (an f16 scale, then 32 int8 quants). */
export const Q8_0_BLOCK = 32;
export const Q8_0_BYTES = 34;

/** Quantize like ggml's quantize_row_q8_0_ref: scale = absmax/127, q = round(x/scale) half away from 0. */
export function quantizeQ8_0(values: Float32Array): Uint8Array {
  if (values.length % Q8_0_BLOCK !== 0)
    throw new Error(`Q8_0 needs a multiple of ${Q8_0_BLOCK} values, got ${values.length}`);
  const blocks = values.length / Q8_0_BLOCK;
  const out = new Uint8Array(blocks * Q8_0_BYTES);
  const view = new DataView(out.buffer);
  const quants = new Int8Array(out.buffer);
  for (let b = 0; b < blocks; b++) {
    const base = b * Q8_0_BLOCK;
    let amax = 0;
    for (let i = 0; i < Q8_0_BLOCK; i++) {
      const a = Math.abs(values[base + i]!);
      if (a > amax) amax = a;
    }
    const d = Math.fround(amax / 127);
    const id = d === 0 ? 0 : Math.fround(1 / d);
    const at = b * Q8_0_BYTES;
    view.setUint16(at, f32ToF16Bits(d), true);
    for (let i = 0; i < Q8_0_BLOCK; i++) {
      const x = Math.fround(values[base + i]! * id);
      quants[at + 2 + i] = x >= 0 ? Math.round(x) : -Math.round(-x); // C roundf: halves away from 0
    }
  }
  return out;
}

/** The values a Q8_0 tensor decodes to (what llama.cpp computes with). */
export function dequantizeQ8_0(bytes: Uint8Array): Float32Array {
  if (bytes.length % Q8_0_BYTES !== 0) throw new Error(`Q8_0 data must be whole ${Q8_0_BYTES}-byte blocks`);
  const blocks = bytes.length / Q8_0_BYTES;
  const out = new Float32Array(blocks * Q8_0_BLOCK);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let b = 0; b < blocks; b++) {
    const d = f16BitsToF32(view.getUint16(b * Q8_0_BYTES, true));
    for (let i = 0; i < Q8_0_BLOCK; i++) out[b * Q8_0_BLOCK + i] = d * view.getInt8(b * Q8_0_BYTES + 2 + i);
  }
  return out;
}
