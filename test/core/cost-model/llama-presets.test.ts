import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { DEFAULT_VIDUR_CSV, fitVidurMlp } from '../../../scripts/fit-vidur.ts';
import { LLAMA2_7B_H100_COEFFICIENTS } from '../../../src/core/cost-model/llama2-7b-h100.ts';
import { costModelPreset } from '../../../src/core/cost-model/presets.ts';

const close = (actual: number, expected: number, rel = 1e-12) =>
  assert.ok(Math.abs(actual - expected) <= rel * Math.abs(expected), `${actual} vs ${expected}`);

test('llama3-70b-h100 is the authors H100 fit, ms converted to seconds', () => {
  const model = costModelPreset('llama3-70b-h100');
  const authorsMs = (ext: number, seq: number) =>
    18.667307208113755 + 7.98791064e-2 * ext + 2.68531603e-3 * seq + 7.44344923e-7 * ext * seq;
  close(model.prefillTime(1000, 500), authorsMs(1000, 1500) / 1000);
  close(model.prefillTime(8192, 0), authorsMs(8192, 8192) / 1000);
  close(model.decodeTime(1, 2047), authorsMs(1, 2048) / 1000);
});

test('llama3-70b-h100 is a TP=4 instance: memory of 4 x 80 GiB', () => {
  const model = costModelPreset('llama3-70b-h100');
  assert.equal(model.instance.gpuCount, 4);
  assert.equal(model.kvBytesPerToken, 327_680);
  assert.equal(model.kvCapacityTokens, Math.floor((4 * 80 * 2 ** 30 * 0.8 - 70_553_706_496 * 2) / 327_680));
});

test('llama2-7b-h100: attention coefficients are the roofline derivation', () => {
  // c: 524,288 KV bytes per context token at 3.35 TB/s x 0.7; d: 4*32*4096 FLOPs per pair at 989.5 TFLOP/s x 0.45.
  close(LLAMA2_7B_H100_COEFFICIENTS.c, 524_288 / (3.35e12 * 0.7));
  close(LLAMA2_7B_H100_COEFFICIENTS.d, (4 * 32 * 4096) / (989.5e12 * 0.45));
  const model = costModelPreset('llama2-7b-h100');
  const { a, b, c, d } = LLAMA2_7B_H100_COEFFICIENTS;
  const floor = LLAMA2_7B_H100_COEFFICIENTS.floor!;
  close(model.prefillTime(1000, 3000), Math.max(floor, a + b * 1000) + c * 4000 + d * 4_000_000);
  // A decode step pays the memory-bound floor, not the line's intercept.
  close(model.decodeTime(1, 99), floor + (c + d) * 100);
  // The hinge stays within 13% of vidur's measured sums (research digest) at every size: the profile is bumpy
  // itself (power-of-two batches run fast: 768 tokens take 18.8 ms, 1024 only 21.0), so no line does better.
  for (const [tokens, measuredMs] of [
    [1, 5.6],
    [512, 12.0],
    [1024, 21.0],
    [2048, 40.3],
    [4096, 83.9],
  ] as const) {
    const hinge = Math.max(floor, a + b * tokens);
    assert.ok(Math.abs(hinge - measuredMs * 1e-3) < 0.13 * measuredMs * 1e-3, `${tokens} tokens: ${hinge}`);
  }
  assert.equal(model.kvBytesPerToken, 524_288);
});

test('llama2-7b-h100: floor, a and b are the hinge fit of the vidur profile', {
  skip: existsSync(DEFAULT_VIDUR_CSV) ? false : 'vidur profile not present',
}, () => {
  const { fit, floorMs, tokens } = fitVidurMlp(DEFAULT_VIDUR_CSV);
  assert.equal(tokens.length, 261);
  close(LLAMA2_7B_H100_COEFFICIENTS.a, fit.intercept * 1e-3, 1e-9);
  close(LLAMA2_7B_H100_COEFFICIENTS.b, fit.slope * 1e-3, 1e-9);
  close(LLAMA2_7B_H100_COEFFICIENTS.floor!, floorMs * 1e-3, 1e-9);
  assert.ok(fit.rSquared > 0.99);
});
