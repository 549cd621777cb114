import { type GgufItemType, type GgufValue, GgufValueType } from './format.ts';

/** A growable little-endian byte buffer for the GGUF header, metadata and tensor infos. */
export class ByteWriter {
  private buf = new Uint8Array(4096);
  private view = new DataView(this.buf.buffer);
  length = 0;

  private reserve(n: number): number {
    if (this.length + n > this.buf.length) {
      const bigger = new Uint8Array(Math.max(this.buf.length * 2, this.length + n));
      bigger.set(this.buf.subarray(0, this.length));
      this.buf = bigger;
      this.view = new DataView(bigger.buffer);
    }
    const at = this.length;
    this.length += n;
    return at;
  }

  /** Make room for n bytes, then write them (through the view `reserve` may have replaced). */
  private put(n: number, write: (view: DataView, at: number) => void): void {
    const at = this.reserve(n);
    write(this.view, at);
  }

  bytes(data: Uint8Array): void {
    const at = this.reserve(data.length); // before reading this.buf: reserve may replace it
    this.buf.set(data, at);
  }
  u8(v: number): void {
    this.put(1, (view, at) => view.setUint8(at, v));
  }
  i8(v: number): void {
    this.put(1, (view, at) => view.setInt8(at, v));
  }
  u16(v: number): void {
    this.put(2, (view, at) => view.setUint16(at, v, true));
  }
  i16(v: number): void {
    this.put(2, (view, at) => view.setInt16(at, v, true));
  }
  u32(v: number): void {
    this.put(4, (view, at) => view.setUint32(at, v, true));
  }
  i32(v: number): void {
    this.put(4, (view, at) => view.setInt32(at, v, true));
  }
  u64(v: number): void {
    this.put(8, (view, at) => view.setBigUint64(at, BigInt(v), true));
  }
  i64(v: number): void {
    this.put(8, (view, at) => view.setBigInt64(at, BigInt(v), true));
  }
  f32(v: number): void {
    this.put(4, (view, at) => view.setFloat32(at, v, true));
  }
  f64(v: number): void {
    this.put(8, (view, at) => view.setFloat64(at, v, true));
  }
  /** A gguf_string_t: u64 byte length, then UTF-8 without a terminator. */
  string(s: string): void {
    const encoded = Buffer.from(s, 'utf8');
    this.u64(encoded.length);
    this.bytes(encoded);
  }
  zeros(n: number): void {
    this.reserve(n); // fresh capacity is zero-filled, and `reserve` only grows
  }

  /** One metadata value of the given type, without its type tag. */
  item(type: GgufItemType, v: number | string | boolean): void {
    switch (type) {
      case 'string':
        this.string(String(v));
        break;
      case 'bool':
        this.u8(v ? 1 : 0);
        break;
      case 'uint8':
        this.u8(Number(v));
        break;
      case 'int8':
        this.i8(Number(v));
        break;
      case 'uint16':
        this.u16(Number(v));
        break;
      case 'int16':
        this.i16(Number(v));
        break;
      case 'uint32':
        this.u32(Number(v));
        break;
      case 'int32':
        this.i32(Number(v));
        break;
      case 'uint64':
        this.u64(Number(v));
        break;
      case 'int64':
        this.i64(Number(v));
        break;
      case 'float32':
        this.f32(Number(v));
        break;
      case 'float64':
        this.f64(Number(v));
        break;
    }
  }

  /** A gguf_metadata_kv_t: key, value type, value. */
  keyValue(key: string, value: GgufValue): void {
    this.string(key);
    this.u32(GgufValueType[value.type]);
    if (value.type === 'array') {
      this.u32(GgufValueType[value.itemType]);
      this.u64(value.value.length);
      for (const v of value.value) this.item(value.itemType, v);
    } else this.item(value.type, value.value);
  }

  result(): Uint8Array {
    return this.buf.subarray(0, this.length);
  }
}
