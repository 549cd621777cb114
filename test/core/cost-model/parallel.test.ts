import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { GPU_SHAPES } from '../../../src/core/cost-model/gpu-shapes.ts';
import { kvCapacityTokens } from '../../../src/core/cost-model/instance.ts';
import { MODEL_SHAPES } from '../../../src/core/cost-model/model-shapes.ts';
import { parallelCostModel } from '../../../src/core/cost-model/parallel.ts';
import { costModelPreset } from '../../../src/core/cost-model/presets.ts';
import { rooflineCostModel } from '../../../src/core/cost-model/roofline.ts';
import type { BatchShape } from '../../../src/core/cost-model/types.ts';

const h100 = GPU_SHAPES['h100-80g'];
const a100 = GPU_SHAPES['a100-80g'];
const llama70 = MODEL_SHAPES['llama3-70b'];
/** No communication cost: an infinitely fast link without latency. */
const free = { interconnectBandwidth: Number.POSITIVE_INFINITY, commLatencySeconds: 0 };

/** A batch of `requests` requests: one prefill of `prefill` new tokens (or none) beside decodes at `context`. */
const batchArb = fc
  .record({
    decodes: fc.integer({ min: 0, max: 256 }),
    context: fc.integer({ min: 1, max: 8000 }),
    prefill: fc.integer({ min: 0, max: 8000 }),
    cached: fc.integer({ min: 0, max: 8000 }),
  })
  .filter(({ decodes, prefill }) => decodes + (prefill > 0 ? 1 : 0) > 0)
  .map(({ decodes, context, prefill, cached }): BatchShape => {
    const seq = cached + prefill;
    return {
      requests: decodes + (prefill > 0 ? 1 : 0),
      newTokens: decodes + prefill,
      seqTokens: decodes * context + (prefill > 0 ? seq : 0),
      newTimesSeq: decodes * context + prefill * seq,
    };
  });

test('tp = pp = 1 is the roofline exactly: iterations, prefill, decode, memory and name', () => {
  for (const [model, gpu] of [
    [MODEL_SHAPES['llama3-8b'], h100],
    [MODEL_SHAPES['opt-13b'], a100],
    [MODEL_SHAPES['mistral-7b'], GPU_SHAPES.l4],
  ] as const) {
    const parallel = parallelCostModel({ model, gpu });
    const roofline = rooflineCostModel({ model, gpu });
    assert.equal(parallel.name, roofline.name);
    assert.equal(parallel.kvCapacityTokens, roofline.kvCapacityTokens);
    assert.equal(parallel.kvBytesPerToken, roofline.kvBytesPerToken);
    assert.deepEqual(parallel.instance, roofline.instance);
    fc.assert(
      fc.property(
        batchArb,
        fc.integer({ min: 1, max: 3000 }),
        fc.integer({ min: 0, max: 30_000 }),
        (b, k, c) => {
          assert.equal(parallel.iterationTime(b), roofline.iterationTime(b));
          assert.equal(parallel.prefillTime(k, c), roofline.prefillTime(k, c));
          assert.equal(parallel.decodeTime(k, c), roofline.decodeTime(k, c));
        },
      ),
      { numRuns: 200 },
    );
  }
});

test('tensor parallelism: 2 all-reduces per layer of 2 (tp-1)/tp x tokens x hidden x 2 B, plus latency, by hand', () => {
  const batch = { requests: 1, newTokens: 1000, seqTokens: 1000, newTimesSeq: 1000 * 1000 };
  const tp4 = parallelCostModel({ model: llama70, gpu: h100, tp: 4 });
  const noComm = parallelCostModel({ model: llama70, gpu: h100, tp: 4, ...free });
  const perAllReduce = 10e-6 + (((2 * 3) / 4) * 1000 * 8192 * 2) / (450e9 * 0.7);
  const comm = tp4.iterationTime(batch) - noComm.iterationTime(batch);
  assert.ok(Math.abs(comm - 2 * 80 * perAllReduce) < 1e-12, `${comm}`);
  // Without communication it is the old tensor-parallel roofline.
  const old = rooflineCostModel({ model: llama70, gpu: h100, gpuCount: 4 });
  assert.ok(Math.abs(noComm.iterationTime(batch) - old.iterationTime(batch)) < 1e-15);
});

test('the communication term grows with tp; compute and memory arms shrink', () => {
  const model = MODEL_SHAPES['opt-66b'];
  for (const batch of [
    { requests: 1, newTokens: 2048, seqTokens: 2048, newTimesSeq: 2048 * 2048 },
    { requests: 64, newTokens: 64, seqTokens: 64 * 1000, newTimesSeq: 64 * 1000 },
  ]) {
    let previousComm = 0;
    let previousArms = Number.POSITIVE_INFINITY;
    for (const tp of [2, 4, 8]) {
      const withComm = parallelCostModel({ model, gpu: a100, tp }).iterationTime(batch);
      const arms = parallelCostModel({ model, gpu: a100, tp, ...free }).iterationTime(batch);
      assert.ok(withComm - arms > previousComm, `tp ${tp}`);
      assert.ok(arms < previousArms, `tp ${tp}`);
      previousComm = withComm - arms;
      previousArms = arms;
    }
  }
});

test('pipeline: a batch with prefill pays the bubble, (pp + m - 1) passes of a micro-batch, by hand', () => {
  const pp2 = parallelCostModel({ model: llama70, gpu: h100, tp: 4, pp: 2, ...free });
  const tp4 = parallelCostModel({ model: llama70, gpu: h100, tp: 4, ...free });
  const overhead = 0.5e-3;
  // Four prefills of 512 as two micro-batches of two: 3 passes of a stage holding half the layers.
  const batch = { requests: 4, newTokens: 2048, seqTokens: 2048, newTimesSeq: 4 * 512 * 512 };
  const micro = { requests: 2, newTokens: 1024, seqTokens: 1024, newTimesSeq: 2 * 512 * 512 };
  const pass = (tp4.iterationTime(micro) - overhead) / 2;
  assert.ok(Math.abs(pp2.iterationTime(batch) - (3 * pass + overhead)) < 1e-12);
  // Decode-only batches are pipelined: max(m, pp) = 2 passes.
  const decode = { requests: 64, newTokens: 64, seqTokens: 64 * 2000, newTimesSeq: 64 * 2000 };
  const half = { requests: 32, newTokens: 32, seqTokens: 32 * 2000, newTimesSeq: 32 * 2000 };
  const decodePass = (tp4.iterationTime(half) - overhead) / 2;
  assert.ok(Math.abs(pp2.iterationTime(decode) - (2 * decodePass + overhead)) < 1e-12);
});

test('pipeline stages add memory but never speed up a request alone', () => {
  for (const pp of [2, 4]) {
    const staged = parallelCostModel({ model: llama70, gpu: a100, tp: 2, pp });
    const flat = parallelCostModel({ model: llama70, gpu: a100, tp: 2, pp: 1, memoryFraction: 0.95 });
    assert.ok(staged.kvCapacityTokens > flat.kvCapacityTokens);
    assert.equal(staged.instance.gpuCount, 2 * pp);
    assert.equal(staged.instance.pipelineStages, pp);
    assert.ok(staged.prefillTime(2000, 0) >= flat.prefillTime(2000, 0));
    assert.ok(staged.decodeTime(100, 1000) >= flat.decodeTime(100, 1000));
  }
  // Memory: weights and KV over tp x pp GPUs.
  const model = parallelCostModel({ model: llama70, gpu: a100, tp: 4, pp: 2 });
  assert.equal(
    model.kvCapacityTokens,
    kvCapacityTokens({ model: llama70, gpu: a100, gpuCount: 8, memoryFraction: 0.8 }),
  );
});

test('iteration time is non-decreasing in new tokens and in context, for TP and PP', () => {
  const models = [
    parallelCostModel({ model: llama70, gpu: h100, tp: 4, pp: 2 }),
    parallelCostModel({ model: MODEL_SHAPES['opt-175b'], gpu: a100, tp: 8, pp: 2 }),
    parallelCostModel({ model: MODEL_SHAPES['llama2-13b'], gpu: GPU_SHAPES.v100, tp: 2 }),
  ];
  fc.assert(
    fc.property(batchArb, fc.integer({ min: 1, max: 500 }), (b, more) => {
      for (const model of models) {
        const time = model.iterationTime(b);
        assert.ok(time > 0);
        const longer = { ...b, seqTokens: b.seqTokens + more, newTimesSeq: b.newTimesSeq + more };
        assert.ok(model.iterationTime(longer) >= time, model.name);
        assert.ok(model.prefillTime(more + 1, 100) >= model.prefillTime(more, 100), model.name);
      }
    }),
    { numRuns: 100 },
  );
});

test('decodeTime closed form equals the sum of one-token iterations, for TP and PP', () => {
  const models = [
    parallelCostModel({ model: llama70, gpu: h100, tp: 4, pp: 2 }),
    parallelCostModel({ model: MODEL_SHAPES['qwen-72b'], gpu: GPU_SHAPES.a6000, tp: 4, pp: 4 }),
  ];
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 0, max: 20_000 }), (k, context) => {
      for (const model of models) {
        let loop = 0;
        for (let j = 1; j <= k; j++) {
          const seq = context + j;
          loop += model.iterationTime({ requests: 1, newTokens: 1, seqTokens: seq, newTimesSeq: seq });
        }
        assert.ok(Math.abs(model.decodeTime(k, context) - loop) <= 1e-9 * loop, model.name);
      }
    }),
    { numRuns: 50 },
  );
});

test('bad degrees and models that do not fit throw clear errors', () => {
  assert.throws(
    () => parallelCostModel({ model: MODEL_SHAPES['opt-175b'], gpu: a100, tp: 2 }),
    /does not fit/,
  );
  assert.throws(() => parallelCostModel({ model: llama70, gpu: a100, tp: 0 }), /tp must be/);
  assert.throws(() => parallelCostModel({ model: llama70, gpu: a100, tp: 8, pp: 1.5 }), /pp must be/);
  assert.throws(() => parallelCostModel({ model: llama70, gpu: a100, tp: 8, pp: 81 }), /exceeds/);
  assert.throws(
    () => parallelCostModel({ model: llama70, gpu: a100, tp: 8, microBatches: 0 }),
    /microBatches/,
  );
});

test('preset names take [xTP][pPP]; the old names keep working', () => {
  const opt = costModelPreset('roofline:opt-66b@a100-80gx4p2');
  assert.equal(opt.name, 'roofline:opt-66b@a100-80gx4p2');
  assert.equal(opt.instance.gpuCount, 8);
  assert.equal(opt.instance.pipelineStages, 2);
  assert.equal(costModelPreset('roofline:llama3-8b@h100p2').instance.gpuCount, 2);
  assert.equal(costModelPreset('roofline:llama3-8b@h100x2').instance.pipelineStages, undefined);
  assert.deepEqual(
    costModelPreset('roofline:opt-13b@a100x2p1').iterationTime({
      requests: 3,
      newTokens: 3,
      seqTokens: 3000,
      newTimesSeq: 3000,
    }),
    costModelPreset('roofline:opt-13b@a100x2').iterationTime({
      requests: 3,
      newTokens: 3,
      seqTokens: 3000,
      newTimesSeq: 3000,
    }),
  );
  for (const name of ['roofline:opt-66b@a100p0', 'roofline:opt-66b@a100x4p', 'roofline:opt-66b@a100q2']) {
    assert.throws(
      () => costModelPreset(name),
      (error: Error) => error.message.includes(name),
    );
  }
  assert.throws(() => costModelPreset('roofline:opt-175b@a100x4'), /does not fit/);
});
