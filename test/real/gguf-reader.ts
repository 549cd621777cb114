// An independent GGUF v3 reader for the tests (written from the spec, sharing no code with the writer).

export interface ParsedTensor {
  name: string;
  dims: number[];
  type: number;
  offset: number;
}

export interface ParsedGguf {
  version: number;
  metadata: Map<string, { type: number; value: unknown }>;
  tensors: ParsedTensor[];
  /** Absolute file offset where tensor data starts. */
  dataStart: number;
}

export function parseGguf(file: Uint8Array): ParsedGguf {
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  let pos = 0;
  const u32 = () => {
    const v = view.getUint32(pos, true);
    pos += 4;
    return v;
  };
  const u64 = () => {
    const v = Number(view.getBigUint64(pos, true));
    pos += 8;
    return v;
  };
  const str = () => {
    const len = u64();
    const s = new TextDecoder('utf-8', { fatal: true }).decode(file.subarray(pos, pos + len));
    pos += len;
    return s;
  };
  const value = (type: number): unknown => {
    const at = pos;
    switch (type) {
      case 0:
        pos += 1;
        return view.getUint8(at);
      case 1:
        pos += 1;
        return view.getInt8(at);
      case 2:
        pos += 2;
        return view.getUint16(at, true);
      case 3:
        pos += 2;
        return view.getInt16(at, true);
      case 4:
        pos += 4;
        return view.getUint32(at, true);
      case 5:
        pos += 4;
        return view.getInt32(at, true);
      case 6:
        pos += 4;
        return view.getFloat32(at, true);
      case 7: {
        pos += 1;
        const b = view.getUint8(at);
        if (b > 1) throw new Error(`bad bool ${b} at ${at}`);
        return b === 1;
      }
      case 8:
        return str();
      case 9: {
        const itemType = u32();
        const n = u64();
        return { itemType, items: Array.from({ length: n }, () => value(itemType)) };
      }
      case 10:
        pos += 8;
        return Number(view.getBigUint64(at, true));
      case 11:
        pos += 8;
        return Number(view.getBigInt64(at, true));
      case 12:
        pos += 8;
        return view.getFloat64(at, true);
      default:
        throw new Error(`unknown value type ${type} at ${at}`);
    }
  };

  const magic = String.fromCharCode(...file.subarray(0, 4));
  if (magic !== 'GGUF') throw new Error(`bad magic ${magic}`);
  pos = 4;
  const version = u32();
  const tensorCount = u64();
  const kvCount = u64();
  const metadata = new Map<string, { type: number; value: unknown }>();
  for (let i = 0; i < kvCount; i++) {
    const key = str();
    if (metadata.has(key)) throw new Error(`duplicate key ${key}`);
    const type = u32();
    metadata.set(key, { type, value: value(type) });
  }
  const tensors: ParsedTensor[] = [];
  for (let i = 0; i < tensorCount; i++) {
    const name = str();
    const nDims = u32();
    const dims = Array.from({ length: nDims }, u64);
    const type = u32();
    tensors.push({ name, dims, type, offset: u64() });
  }
  const alignment = (metadata.get('general.alignment')?.value as number | undefined) ?? 32;
  const dataStart = Math.ceil(pos / alignment) * alignment;
  for (let i = pos; i < dataStart; i++) if (file[i] !== 0) throw new Error(`non-zero padding byte at ${i}`);
  return { version, metadata, tensors, dataStart };
}

/** Bytes of a tensor of ggml type f32 (0), f16 (1) or q8_0 (8). */
export function parsedTensorBytes(t: ParsedTensor): number {
  const n = t.dims.reduce((a, b) => a * b, 1);
  if (t.type === 0) return 4 * n;
  if (t.type === 1) return 2 * n;
  if (t.type === 8) return (n / 32) * 34;
  throw new Error(`unexpected tensor type ${t.type}`);
}

/** A metadata value, failing the test when it is missing. */
export function meta(parsed: ParsedGguf, key: string): { type: number; value: unknown } {
  const v = parsed.metadata.get(key);
  if (v === undefined) throw new Error(`missing metadata ${key}`);
  return v;
}
