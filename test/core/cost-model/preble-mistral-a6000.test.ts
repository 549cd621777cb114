import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { prebleMistralA6000CostModel } from '../../../src/core/cost-model/preble-mistral-a6000.ts';

/*
 * The authors' formulas (WukLab/preble, preble/benchmarks/exp_configs/model_equations.py), in ms, as
 * published, including the quadratic middle piece and the shared-KV halving that the model leaves out.
 */
function authorsLinearMs(n: number): number {
  if (n >= 384) return 0.10842571 * n + 4.209777054806409;
  if (n >= 192) return -118 + 1.25 * n - 2.56e-3 * n ** 2;
  return 22;
}
function authorsAttentionMs(requests: number, totalContext: number, uniqueKv: number): number {
  if (totalContext <= 1024) return 0.32;
  const ms = 1.86e-4 * totalContext + 0.159;
  return uniqueKv / requests <= 1024 && requests * uniqueKv <= 32 * 256 * 2048 ? ms / 2 : ms;
}
function authorsExtendMs(ext: number, seq: number): number {
  return ext * seq > 1024 * 1024 ? 1.13e-3 * ext + 1.75e-3 * seq + 2.19e-6 * ext * seq : 0;
}
/** LP_mistral_7b_A6000_sglang_extend_flashinfer(n, seq): one request, unique KV = n. */
function authorsPrefillMs(n: number, seq: number): number {
  return (authorsLinearMs(n) + authorsAttentionMs(1, seq, n) + authorsExtendMs(n, seq)) / 0.9;
}

const model = prebleMistralA6000CostModel({ kvBytesPerToken: 131_072, kvCapacityTokens: 198_516 });
const seconds = (ms: number) => ms / 1000;
const close = (actual: number, expected: number, rel = 1e-12) =>
  assert.ok(Math.abs(actual - expected) <= rel * expected, `${actual} vs ${expected}`);

test('prefill equals the authors formula where it is well-behaved and no halving applies', () => {
  // [new, cached]: n outside 192..383, and either n > 1024 or seq <= 1024.
  for (const [n, cached] of [
    [1, 0],
    [100, 0],
    [150, 500],
    [1000, 0],
    [4096, 0],
    [2048, 2048],
    [8000, 8000],
    [16384, 0],
  ] as const) {
    close(model.prefillTime(n, cached), seconds(authorsPrefillMs(n, n + cached)));
  }
  // 1k tokens: (0.10842571*1000 + 4.2098 + 0.32) / 0.9 = 125.5 ms, as the digest says.
  close(model.prefillTime(1000, 0), 0.1255061, 1e-6);
});

test('prefill never halves the decode-attention term (BatchShape has no unique-KV count)', () => {
  // 512 new on 4096 cached: the authors halve 1.86e-4 * 4608 + 0.159 because unique KV (512) <= 1024.
  const halvedAway = (1.86e-4 * 4608 + 0.159) / 2 / 0.9;
  close(model.prefillTime(512, 4096), seconds(authorsPrefillMs(512, 4608) + halvedAway));
});

test('the 192..383 region is the line from 22 ms at 192 to the long-batch line at 384', () => {
  const at384 = 0.10842571 * 384 + 4.209777054806409;
  for (const n of [192, 200, 244, 300, 360, 383]) {
    const linearMs = 22 + ((n - 192) / 192) * (at384 - 22);
    // cached 0: seq = n <= 1024 (attention 0.32) and n * n < 2^20 (no extend term).
    close(model.prefillTime(n, 0), seconds((linearMs + 0.32) / 0.9));
    assert.ok(model.prefillTime(n, 0) > 0);
  }
  // Continuous at both ends.
  assert.ok(Math.abs(model.prefillTime(192, 0) - model.prefillTime(191, 0)) < 1e-12);
  assert.ok(model.prefillTime(384, 0) - model.prefillTime(383, 0) < 0.2e-3);
});

test('prefill is positive and non-decreasing through the old negative region', () => {
  for (const cached of [0, 500, 1024, 5000, 60_000]) {
    let previous = 0;
    for (let n = 150; n <= 450; n++) {
      const time = model.prefillTime(n, cached);
      assert.ok(time > 0 && time >= previous, `n=${n} cached=${cached}`);
      previous = time;
    }
  }
  fc.assert(
    fc.property(fc.integer({ min: 150, max: 450 }), fc.integer({ min: 0, max: 100_000 }), (n, cached) => {
      assert.ok(model.prefillTime(n, cached + 1) >= model.prefillTime(n, cached));
    }),
  );
});

test('one decode step follows the authors decode regression', () => {
  // mistrial_7b_A6000_sglang_decode_flashinfer: (linear(1) + attention(total context)) / 0.9.
  close(model.decodeTime(1, 499), seconds((22 + 0.32) / 0.9));
  close(model.decodeTime(1, 1999), seconds((22 + 1.86e-4 * 2000 + 0.159) / 0.9));
  // Two steps across the 1024 boundary: seq 1024 then 1025.
  close(model.decodeTime(2, 1023), seconds((22 + 0.32 + 22 + 1.86e-4 * 1025 + 0.159) / 0.9));
});

test('decodeTime closed form equals the sum of one-token iterations, across the 1024 boundary', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 3000 }), fc.integer({ min: 0, max: 3000 }), (k, context) => {
      let loop = 0;
      for (let j = 1; j <= k; j++) {
        const seq = context + j;
        loop += model.iterationTime({ requests: 1, newTokens: 1, seqTokens: seq, newTimesSeq: seq });
      }
      close(model.decodeTime(k, context), loop, 1e-9);
    }),
  );
});

test('a mixed batch stays within 1% of the authors per-request sum (their own example)', () => {
  // 12 decodes at seq 7267 and one 512-token chunk at seq 7000 (model_equations.py __main__), with the
  // batch counted consistently (524 new tokens) and their unique-KV count 79,629 (no halving: 6,125 > 1024).
  const newTokens = 12 + 512;
  const seqTokens = 12 * 7267 + 7000;
  const authorsMs =
    (authorsLinearMs(newTokens) +
      authorsAttentionMs(13, seqTokens, 79_629) +
      12 * authorsExtendMs(1, 7267) +
      authorsExtendMs(512, 7000)) /
    0.9;
  const time = model.iterationTime({
    requests: 13,
    newTokens,
    seqTokens,
    newTimesSeq: 12 * 7267 + 512 * 7000,
  });
  close(time, seconds(authorsMs), 0.01);
});
