import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import fc from 'fast-check';
import { pointsFromSamples, type Sample, type Scored } from '../../../scripts/calibrate-llamacpp.ts';
import { fitLlamaCppCpu, predictPointMs } from '../../../src/core/cost-model/llamacpp-fit.ts';
import {
  attentionPairs,
  LLAMACPP_SMALL_CPU_COEFFICIENTS,
  LLAMACPP_SMALL_MODEL,
} from '../../../src/core/cost-model/llamacpp-small-cpu.ts';
import { costModelPreset, presetNames } from '../../../src/core/cost-model/presets.ts';
import { singleRequestBatch } from '../../../src/core/cost-model/types.ts';
import { LLAMA_PRESETS } from '../../../src/real/gguf/presets.ts';

const calibration = JSON.parse(
  readFileSync(new URL('../../../docs/results/calibration/llamacpp-small-cpu.json', import.meta.url), 'utf8'),
) as {
  samples: Sample[];
  fit: {
    coefficients: Record<string, number>;
    maxRelError: number;
    meanRelError: number;
    points: Scored[];
  };
};
const model = costModelPreset('llamacpp-small-cpu');

test('llamacpp-small-cpu is registered by name, with the replica KV size and the small shape', () => {
  assert.ok(presetNames().includes('llamacpp-small-cpu'));
  assert.equal(model.name, 'llamacpp-small-cpu');
  assert.equal(model.kvCapacityTokens, 16_384); // llama-server -c
  assert.equal(costModelPreset('llamacpp-small-cpu', { kvCapacityTokens: 4096 }).kvCapacityTokens, 4096);
  const small = LLAMA_PRESETS.small;
  assert.equal(LLAMACPP_SMALL_MODEL.layers, small.layers);
  assert.equal(LLAMACPP_SMALL_MODEL.hidden, small.embedding);
  assert.equal(LLAMACPP_SMALL_MODEL.kvHeads, small.kvHeads);
  assert.equal(LLAMACPP_SMALL_MODEL.headDim, small.embedding / small.heads);
  // 2 (K and V) x 6 layers x 4 KV heads x 64 x 2 bytes (f16).
  assert.equal(model.kvBytesPerToken, 2 * 6 * 4 * 64 * 2);
});

test('attention pairs: causal, tiled from 64 rows per 512-token micro-batch, row by row below and for decodes', () => {
  const total = (p: { tiled: number; rowByRow: number }) => p.tiled + p.rowByRow;
  // 100 new on 500 cached: one micro-batch of 100 rows, padded to two 64-row tiles.
  assert.deepEqual(attentionPairs(singleRequestBatch(100, 500)), {
    tiled: 128 * 500 + (128 * 129) / 2,
    rowByRow: 0,
  });
  assert.deepEqual(attentionPairs(singleRequestBatch(63, 500)), { tiled: 0, rowByRow: 63 * 500 + 63 * 32 });
  // 1,030 new: micro-batches of 512, 512 (tiled) and 6 rows (row by row) after 1,024 of them.
  const long = attentionPairs(singleRequestBatch(1030, 0));
  assert.equal(long.rowByRow, 6 * 1024 + 21);
  assert.equal(long.tiled, (512 * 513) / 2 + 512 * 512 + (512 * 513) / 2);
  // Decode rows: each reads its sequence.
  assert.deepEqual(attentionPairs({ requests: 3, newTokens: 3, seqTokens: 900, newTimesSeq: 900 }), {
    tiled: 0,
    rowByRow: 900,
  });
  // A 100-token prefill on 500 cached beside two decodes at 300 and 400.
  const mixed = attentionPairs({ requests: 3, newTokens: 102, seqTokens: 1300, newTimesSeq: 60_000 + 700 });
  assert.deepEqual(mixed, { tiled: 128 * 500 + (128 * 129) / 2, rowByRow: 700 });
  // Two prefills in one batch break the one-prefill reading; the counts stay finite and non-negative.
  const two = attentionPairs({ requests: 2, newTokens: 512, seqTokens: 512, newTimesSeq: 2 * 256 * 256 });
  assert.ok(two.tiled >= 0 && two.rowByRow >= 0 && Number.isFinite(total(two)));
});

test('llamacpp-small-cpu: the 64-row cliff meets in the middle instead of falling', () => {
  // llama.cpp: 63 new tokens on 3,001 cached took 342 ms, 64 took 103 ms; the preset charges both about the same.
  const below = model.prefillTime(63, 3001);
  const above = model.prefillTime(64, 3001);
  assert.ok(above >= below && above < 1.01 * below);
  assert.ok(below > 0.103 && below < 0.342);
});

test('llamacpp-small-cpu: prefill and decode grow with new tokens and with context', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 16_000 }),
      fc.integer({ min: 0, max: 16_000 }),
      fc.integer({ min: 1, max: 2000 }),
      (n, cached, more) => {
        const time = model.prefillTime(n, cached);
        assert.ok(time > 0);
        assert.ok(model.prefillTime(n + more, cached) > time);
        assert.ok(model.prefillTime(n, cached + more) > time);
        const decode = model.decodeTime(n, cached);
        assert.ok(model.decodeTime(n + more, cached) > decode);
        assert.ok(model.decodeTime(n, cached + more) > decode);
      },
    ),
  );
  for (const cached of [0, 500, 3000]) {
    for (let n = 1; n < 300; n++) assert.ok(model.prefillTime(n + 1, cached) > model.prefillTime(n, cached));
  }
  // Another request in a decode step never makes the step cheaper.
  const step = (r: number) =>
    model.iterationTime({ requests: r, newTokens: r, seqTokens: 1000 * r, newTimesSeq: 1000 * r });
  for (let r = 1; r < 8; r++) assert.ok(step(r + 1) > step(r));
});

test('llamacpp-small-cpu reproduces every committed measurement within the reported error', () => {
  const { points, maxRelError, meanRelError } = calibration.fit;
  assert.ok(points.length >= 60, `${points.length} points`);
  // The bounds in docs/results/calibration/llamacpp-small-cpu.md and the preset's comment.
  assert.ok(maxRelError < 0.76 && meanRelError < 0.097, `max ${maxRelError}, mean ${meanRelError}`);
  let worst = 0;
  let worstAwayFromCliff = 0;
  for (const point of points) {
    const predicted =
      point.kind === 'prefill'
        ? model.prefillTime(point.newTokens, point.cachedTokens) * 1e3
        : predictPointMs(model.iterationTime, point);
    const error = Math.abs(predicted - point.ms) / point.ms;
    assert.ok(Math.abs(predicted - point.predictedMs) <= 1e-9 * predicted, JSON.stringify(point));
    worst = Math.max(worst, error);
    if (Math.abs(point.relError - point.mechanismRelError) < 1e-9)
      worstAwayFromCliff = Math.max(worstAwayFromCliff, error);
  }
  assert.ok(Math.abs(worst - maxRelError) < 1e-9);
  assert.ok(worstAwayFromCliff < 0.22, `away from the cliff: ${worstAwayFromCliff}`);
});

test('llamacpp-small-cpu constants are the fit of the committed samples', () => {
  const points = pointsFromSamples(calibration.samples);
  assert.deepEqual(
    points.map((p) => p.ms),
    calibration.fit.points.map((p) => p.ms),
  );
  const refit = fitLlamaCppCpu(points).coefficients;
  for (const [name, value] of Object.entries(LLAMACPP_SMALL_CPU_COEFFICIENTS)) {
    const fitted = refit[name as keyof typeof refit];
    assert.ok(value >= 0, name);
    assert.ok(Math.abs(value - fitted) <= 1e-9 * fitted, `${name}: ${value} vs ${fitted}`);
    assert.equal(calibration.fit.coefficients[name], fitted);
  }
});
