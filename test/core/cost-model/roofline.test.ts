import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { GPU_SHAPES } from '../../../src/core/cost-model/gpu-shapes.ts';
import { MODEL_SHAPES } from '../../../src/core/cost-model/model-shapes.ts';
import { memoryBandwidthFloor, rooflineCostModel } from '../../../src/core/cost-model/roofline.ts';

const h100 = GPU_SHAPES['h100-80g'];

test('7B on one H100: 1000-token prefill 20..200 ms, decode step 5..30 ms', () => {
  for (const model of [MODEL_SHAPES['llama2-7b'], MODEL_SHAPES['mistral-7b']]) {
    const roofline = rooflineCostModel({ model, gpu: h100 });
    const prefill = roofline.prefillTime(1000, 0);
    const step = roofline.decodeTime(1, 1000);
    assert.ok(prefill > 0.02 && prefill < 0.2, `${model.name} prefill ${prefill}`);
    assert.ok(step > 0.005 && step < 0.03, `${model.name} decode step ${step}`);
  }
});

test('iteration time is max(compute, memory) + overhead, by hand', () => {
  const model = MODEL_SHAPES['llama3-8b'];
  const roofline = rooflineCostModel({ model, gpu: h100, gpuCount: 2, overheadSeconds: 1e-3 });
  // Prefill 2000 new on 0 cached: compute-bound.
  const flops = 2 * 8_030_261_248 * 2000 + 4 * 32 * 4096 * 2000 * 2000;
  const compute = flops / (989.5e12 * 2 * 0.45);
  const memory = (8_030_261_248 * 2 + 131_072 * 4000) / (3.35e12 * 2 * 0.7);
  assert.ok(compute > memory);
  assert.ok(Math.abs(roofline.prefillTime(2000, 0) - (compute + 1e-3)) < 1e-15);
  // 64 decodes at 1000 context each: memory-bound, decode MFU.
  const batch = { requests: 64, newTokens: 64, seqTokens: 64_000, newTimesSeq: 64_000 };
  const decodeMemory = (8_030_261_248 * 2 + 131_072 * (64_000 + 64)) / (3.35e12 * 2 * 0.7);
  assert.ok(Math.abs(roofline.iterationTime(batch) - (decodeMemory + 1e-3)) < 1e-15);
  assert.equal(roofline.name, 'roofline:llama3-8b@h100-80gx2');
});

test('tensor parallelism speeds iterations up and adds memory', () => {
  const model = MODEL_SHAPES['llama3-70b'];
  const tp4 = rooflineCostModel({ model, gpu: h100, gpuCount: 4 });
  const tp8 = rooflineCostModel({ model, gpu: h100, gpuCount: 8 });
  assert.ok(tp8.prefillTime(4000, 0) < tp4.prefillTime(4000, 0));
  assert.ok(tp8.kvCapacityTokens > tp4.kvCapacityTokens);
  assert.throws(() => rooflineCostModel({ model, gpu: h100, gpuCount: 1 }), /does not fit/);
  assert.throws(() => rooflineCostModel({ model, gpu: h100, gpuCount: 0 }), /gpuCount/);
});

test('decodeTime closed form equals the loop, including where compute overtakes memory', () => {
  // A slow-compute GPU makes long-context decode compute-bound, so the sum crosses the two arms.
  const gpu = { name: 'slow', memoryBytes: 80 * 2 ** 30, peakFlops: 2e12, bandwidth: 3e12 };
  const models = [
    rooflineCostModel({ model: MODEL_SHAPES['llama3-8b'], gpu: h100 }),
    rooflineCostModel({ model: MODEL_SHAPES['llama3-8b'], gpu }),
  ];
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 2000 }), fc.integer({ min: 0, max: 200_000 }), (k, context) => {
      for (const model of models) {
        let loop = 0;
        for (let j = 1; j <= k; j++) {
          const seq = context + j;
          loop += model.iterationTime({ requests: 1, newTokens: 1, seqTokens: seq, newTimesSeq: seq });
        }
        assert.ok(Math.abs(model.decodeTime(k, context) - loop) <= 1e-9 * loop);
      }
    }),
  );
});

test('memory-bandwidth floor: weights and the batch KV once at full bandwidth, by hand', () => {
  const model = MODEL_SHAPES['llama3-70b'];
  const batch = { requests: 64, newTokens: 64, seqTokens: 64 * 4097, newTimesSeq: 64 * 4097 };
  // 141.1 GB of weights + 327,680 B x 262,208 tokens over 4 x 3.35 TB/s: 16.94 ms.
  const floor = memoryBandwidthFloor({ model, gpu: h100, gpuCount: 4 }, batch);
  assert.ok(Math.abs(floor - (70_553_706_496 * 2 + 327_680 * 64 * 4097) / (4 * 3.35e12)) < 1e-15);
  // The roofline's memory arm is the floor at 70% of the bandwidth, plus the KV written and the overhead.
  const roofline = rooflineCostModel({ model, gpu: h100, gpuCount: 4 });
  assert.ok(roofline.iterationTime(batch) > floor / 0.7);
  const cpu = { ...h100, name: 'cpu', bandwidth: 0 };
  assert.throws(() => memoryBandwidthFloor({ model, gpu: cpu, gpuCount: 1 }, batch), /no memory bandwidth/);
});
