import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { costModelPreset, presetNames } from '../../../src/core/cost-model/presets.ts';

const presets = presetNames().map((name) => costModelPreset(name));

test('every listed name builds, with its own name and instance', () => {
  const names = presetNames();
  for (const name of ['mistral-7b-a6000', 'llama3-70b-h100', 'llama2-7b-h100', 'roofline:llama3-8b@h100']) {
    assert.ok(names.includes(name), name);
  }
  for (const [i, preset] of presets.entries()) {
    assert.equal(preset.name, names[i]);
    assert.ok(preset.kvCapacityTokens > 0);
    assert.ok(preset.instance.model.params > 0);
  }
});

test('roofline names accept a tensor-parallel suffix and GPU aliases', () => {
  const tp1 = costModelPreset('roofline:llama3-8b@h100x1');
  assert.equal(tp1.instance.gpu.name, 'h100-80g');
  assert.equal(tp1.instance.gpuCount, 1);
  const tp4 = costModelPreset('roofline:llama3-70b@h100-80gx4');
  assert.equal(tp4.instance.gpuCount, 4);
  assert.equal(costModelPreset('roofline:mistral-7b@a6000').instance.gpu.name, 'a6000');
});

test('unknown names throw an error that lists the valid names', () => {
  for (const name of ['nope', 'roofline:gpt-5@h100', 'roofline:llama3-8b@tpu', 'roofline:llama3-8b@h100x0']) {
    assert.throws(
      () => costModelPreset(name),
      (error: Error) => error.message.includes(name) && error.message.includes('mistral-7b-a6000'),
    );
  }
  assert.throws(() => costModelPreset('roofline:llama3-70b@a6000'), /does not fit/);
});

test('mistral-7b-a6000 at memory fraction 0.8 is within 3% of the authors 198,516 tokens', () => {
  const mistral = costModelPreset('mistral-7b-a6000');
  assert.equal(mistral.kvBytesPerToken, 131_072);
  // (0.8 x 48 GiB - 7,241,732,096 x 2 B) / 131,072 B.
  assert.equal(mistral.kvCapacityTokens, Math.floor((0.8 * 48 * 2 ** 30 - 7_241_732_096 * 2) / 131_072));
  assert.ok(Math.abs(mistral.kvCapacityTokens / 198_516 - 1) < 0.03);
});

test('overrides: capacity wins, memory fraction moves capacity, bad fractions throw', () => {
  for (const name of presetNames()) {
    assert.equal(costModelPreset(name, { kvCapacityTokens: 64 }).kvCapacityTokens, 64);
  }
  const small = costModelPreset('llama2-7b-h100', { memoryFraction: 0.5 });
  const large = costModelPreset('llama2-7b-h100', { memoryFraction: 0.95 });
  assert.ok(small.kvCapacityTokens < large.kvCapacityTokens);
  assert.equal(small.instance.memoryFraction, 0.5);
  assert.throws(() => costModelPreset('llama2-7b-h100', { memoryFraction: 0 }), /memoryFraction/);
  assert.throws(() => costModelPreset('llama2-7b-h100', { memoryFraction: 1.5 }), /memoryFraction/);
});

test('every preset: prefill is positive and non-decreasing in new and in cached tokens', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 20_000 }),
      fc.integer({ min: 0, max: 100_000 }),
      fc.integer({ min: 1, max: 4000 }),
      (n, cached, more) => {
        for (const preset of presets) {
          const time = preset.prefillTime(n, cached);
          assert.ok(time > 0, `${preset.name} (${n}, ${cached})`);
          assert.ok(preset.prefillTime(n + more, cached) >= time, `${preset.name} new ${n}+${more}`);
          assert.ok(preset.prefillTime(n, cached + more) >= time, `${preset.name} cached ${cached}+${more}`);
        }
      },
    ),
  );
});

test('every preset: prefill is non-decreasing step by step over 1..600 new tokens', () => {
  for (const preset of presets) {
    for (const cached of [0, 1000, 30_000]) {
      let previous = 0;
      for (let n = 1; n <= 600; n++) {
        const time = preset.prefillTime(n, cached);
        assert.ok(time > 0 && time >= previous, `${preset.name} n=${n} cached=${cached}`);
        previous = time;
      }
    }
  }
});

test('every preset: prefill is one iteration of the request alone, 0 when there is nothing to prefill', () => {
  for (const preset of presets) {
    const batch = { requests: 1, newTokens: 700, seqTokens: 1200, newTimesSeq: 700 * 1200 };
    assert.equal(preset.prefillTime(700, 500), preset.iterationTime(batch));
    assert.equal(preset.prefillTime(0, 500), 0);
    assert.equal(preset.decodeTime(0, 500), 0);
  }
});

test('every preset: decodeTime closed form equals the sum of one-token iterations', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 2000 }), fc.integer({ min: 0, max: 50_000 }), (k, context) => {
      for (const preset of presets) {
        let loop = 0;
        for (let j = 1; j <= k; j++) {
          const seq = context + j;
          loop += preset.iterationTime({ requests: 1, newTokens: 1, seqTokens: seq, newTimesSeq: seq });
        }
        const closed = preset.decodeTime(k, context);
        assert.ok(Math.abs(closed - loop) <= 1e-9 * loop, `${preset.name}: ${closed} vs ${loop}`);
      }
    }),
    { numRuns: 50 },
  );
});
