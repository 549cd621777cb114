import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { DEFAULT_VIDUR_CSV, fitVidurMlp } from '../../../scripts/fit-vidur.ts';
import { GPU_SHAPES } from '../../../src/core/cost-model/gpu-shapes.ts';
import { LLAMA2_7B_H100_COEFFICIENTS } from '../../../src/core/cost-model/llama2-7b-h100.ts';
import { LLAMA3_70B_H100_COEFFICIENTS } from '../../../src/core/cost-model/llama3-70b-h100.ts';
import { MODEL_SHAPES } from '../../../src/core/cost-model/model-shapes.ts';
import { costModelPreset } from '../../../src/core/cost-model/presets.ts';
import { rooflineCostModel } from '../../../src/core/cost-model/roofline.ts';

const close = (actual: number, expected: number, rel = 1e-12) =>
  assert.ok(Math.abs(actual - expected) <= rel * Math.abs(expected), `${actual} vs ${expected}`);

test('llama3-70b-h100: prefill is the authors H100 fit, ms converted to seconds', () => {
  const model = costModelPreset('llama3-70b-h100');
  const authorsMs = (ext: number, seq: number) =>
    18.667307208113755 + 7.98791064e-2 * ext + 2.68531603e-3 * seq + 7.44344923e-7 * ext * seq;
  close(model.prefillTime(1000, 500), authorsMs(1000, 1500) / 1000);
  close(model.prefillTime(8192, 0), authorsMs(8192, 8192) / 1000);
  close(model.prefillTime(2, 8000), authorsMs(2, 8002) / 1000);
});

test('llama3-70b-h100: decode is the roofline of Llama-3-70B on 4 H100, not the prefill fit', () => {
  const model = costModelPreset('llama3-70b-h100');
  // The roofline without all-reduces (roofline:llama3-70b@h100x4 adds them; this preset predates them).
  const roofline = rooflineCostModel({
    model: MODEL_SHAPES['llama3-70b'],
    gpu: GPU_SHAPES['h100-80g'],
    gpuCount: 4,
  });
  close(model.decodeTime(1, 2047), roofline.decodeTime(1, 2047));
  close(model.decodeTime(300, 4000), roofline.decodeTime(300, 4000));
  for (const requests of [1, 16, 64, 256]) {
    const batch = { requests, newTokens: requests, seqTokens: requests * 1500, newTimesSeq: requests * 1500 };
    close(model.iterationTime(batch), roofline.iterationTime(batch));
  }
  // 64 decodes at 4k context: the weights (141 GB) and 86 GB of KV at 70% of 4 x 3.35 TB/s, plus 0.5 ms.
  const step = model.iterationTime({
    requests: 64,
    newTokens: 64,
    seqTokens: 64 * 4097,
    newTimesSeq: 64 * 4097,
  });
  close(step, (70_553_706_496 * 2 + 327_680 * 64 * 4098) / (4 * 3.35e12 * 0.7) + 0.5e-3);
});

test('llama3-70b-h100: a prefill beside decodes is the fit for the prefill, the decodes context at the KV-read rate', () => {
  const model = costModelPreset('llama3-70b-h100');
  const { a, b, c, d } = LLAMA3_70B_H100_COEFFICIENTS;
  // A 512-token chunk on 1000 cached tokens beside 63 decodes at 4096 context.
  const decodeSeq = 63 * 4097;
  const batch = {
    requests: 64,
    newTokens: 63 + 512,
    seqTokens: decodeSeq + 1512,
    newTimesSeq: decodeSeq + 512 * 1512,
  };
  const kvRead = 327_680 / (4 * 3.35e12 * 0.7);
  close(
    model.iterationTime(batch),
    a + b * 575 + c * 1512 + kvRead * decodeSeq + d * batch.newTimesSeq,
    1e-9,
  );
  // The old preset charged c to every decode row's context too: 0.70 s more.
  assert.ok(model.iterationTime(batch) < 0.1);
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

const VIDUR_70B_CSV = fileURLToPath(
  new URL('../../../../shared/data/vidur-profiling/h100/meta-llama/Llama-2-70b-hf/mlp.csv', import.meta.url),
);

test('llama3-70b-h100: the roofline weight read is within 2% of vidur TP4 floor for the same layer shapes', {
  skip: existsSync(VIDUR_70B_CSV) ? false : 'vidur profile not present',
}, () => {
  // Llama-2-70B and Llama-3-70B share every per-layer shape; vidur's ops leave out the embedding and LM head.
  const { floorMs } = fitVidurMlp(VIDUR_70B_CSV, 4, 80);
  assert.ok(Math.abs(floorMs - 14.86) < 0.01, `${floorMs}`);
  const weightReadMs = ((70_553_706_496 * 2) / (4 * 3.35e12 * 0.7)) * 1e3;
  assert.ok(Math.abs(weightReadMs / floorMs - 1) < 0.02, `${weightReadMs} vs ${floorMs}`);
});
