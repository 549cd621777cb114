import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { f16BitsToF32, f32ToF16Bits } from '../../src/real/gguf/f16.ts';
import { dequantizeQ8_0, Q8_0_BYTES, quantizeQ8_0 } from '../../src/real/gguf/q8_0.ts';

describe('f16', () => {
  it('round-trips every non-NaN f16 bit pattern', () => {
    for (let h = 0; h < 0x10000; h++) {
      const v = f16BitsToF32(h);
      if (Number.isNaN(v)) continue;
      assert.equal(f32ToF16Bits(v), h, `0x${h.toString(16)}`);
    }
  });

  it('rounds to nearest even and saturates to infinity', () => {
    assert.equal(f32ToF16Bits(1), 0x3c00);
    assert.equal(f32ToF16Bits(0.1), 0x2e66);
    assert.equal(f32ToF16Bits(65504), 0x7bff);
    assert.equal(f32ToF16Bits(1e6), 0x7c00);
    assert.equal(f32ToF16Bits(-(2 ** -24)), 0x8001);
    assert.equal(f32ToF16Bits(2 ** -26), 0); // below half the smallest subnormal
    assert.equal(f32ToF16Bits(1 + 2 ** -11), 0x3c00); // a tie goes to the even mantissa
    assert.equal(f32ToF16Bits(1 + 3 * 2 ** -11), 0x3c02);
  });
});

describe('Q8_0', () => {
  const blocks = fc.integer({ min: 1, max: 6 }).chain((n) =>
    fc.float32Array({
      minLength: 32 * n,
      maxLength: 32 * n,
      min: Math.fround(-1e4),
      max: Math.fround(1e4),
      noNaN: true,
    }),
  );

  it('dequantizes within half a step (plus the f16 scale rounding) of every value', () => {
    fc.assert(
      fc.property(blocks, (values) => {
        const bytes = quantizeQ8_0(values);
        assert.equal(bytes.length, (values.length / 32) * Q8_0_BYTES);
        const back = dequantizeQ8_0(bytes);
        for (let b = 0; b < values.length / 32; b++) {
          const block = values.subarray(32 * b, 32 * b + 32);
          const amax = Math.max(...Array.from(block, Math.abs));
          // step/2 from rounding, 127 * (f16 error of the scale), and f32 slack
          const bound = amax / 254 + amax / 2048 + 127 * 2 ** -25 + amax * 1e-6;
          for (let i = 0; i < 32; i++) {
            const err = Math.abs(block[i]! - back[32 * b + i]!);
            assert.ok(err <= bound, `block ${b} value ${block[i]} came back ${back[32 * b + i]}`);
          }
        }
      }),
    );
  });

  it('keeps the largest value of a block exact up to the scale rounding, and zeros as zeros', () => {
    const values = new Float32Array(32);
    values[3] = -2.5;
    const back = dequantizeQ8_0(quantizeQ8_0(values));
    assert.ok(Math.abs(back[3]! + 2.5) < 2.5 / 2048);
    assert.ok(back.every((v, i) => i === 3 || v === 0));
    assert.ok(dequantizeQ8_0(quantizeQ8_0(new Float32Array(64))).every((v) => v === 0));
  });

  it('rejects a length that is not whole blocks', () => {
    assert.throws(() => quantizeQ8_0(new Float32Array(33)), /multiple of 32/);
  });
});
