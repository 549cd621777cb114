import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { costModelPreset } from '../../../src/core/cost-model/presets.ts';
import {
  contextLimit,
  costModelFits,
  decodeStepSeconds,
  FitWindow,
  fitDecode,
  fitKv,
  fitPrefill,
  type PrefillFit,
  type PrefillSample,
  prefillSeconds,
} from '../../../src/core/provisioning/fits.ts';
import { Random } from '../../../src/core/random.ts';

/** Relative noise of at most `share`, seeded. */
const noisy = (random: Random, share: number) => (x: number) => x * (1 + share * (2 * random.next() - 1));

test('Eq. 1-3 coefficients are recovered from synthetic samples with 1% noise', () => {
  fc.assert(
    fc.property(
      fc.record({
        h: fc.double({ min: 0.5, max: 2, noNaN: true }),
        j: fc.double({ min: 0, max: 64, noNaN: true }),
        k1: fc.double({ min: 1e-5, max: 1e-3, noNaN: true }),
        c1: fc.double({ min: 1e-3, max: 0.05, noNaN: true }),
        k2: fc.double({ min: 1e-7, max: 1e-6, noNaN: true }),
        c2: fc.double({ min: 1e-5, max: 1e-4, noNaN: true }),
        c3: fc.double({ min: 5e-3, max: 0.03, noNaN: true }),
        seed: fc.nat(),
        // Ranges where each term is a visible share of the time: a term under the noise is not identifiable.
      }),
      (c) => {
        const jitter = noisy(new Random(c.seed), 0.01);
        const kv = fitKv(
          [100, 500, 1000, 2000, 4000, 8000].map((t) => ({ tokens: t, kv: jitter(c.h * t + c.j) })),
        );
        const prefill = fitPrefill(
          [64, 256, 512, 1024, 2048, 4096].map((n) => ({ inputTokens: n, seconds: jitter(c.k1 * n + c.c1) })),
        );
        const samples = [];
        for (const b of [2, 4, 16, 64])
          for (const l of [128, 1024, 4096])
            samples.push({ batch: b, meanContext: l, seconds: jitter((c.k2 * l + c.c2) * b + c.c3) });
        const decode = fitDecode(samples);
        // Predictions within 3% over the sampled range (coefficients can trade off within the noise).
        const close = (a: number, b: number) => Math.abs(a - b) <= 0.03 * Math.abs(b);
        assert.ok(close(kv.h * 3000 + kv.j, c.h * 3000 + c.j));
        assert.ok(close(prefillSeconds(prefill, 1500), c.k1 * 1500 + c.c1));
        assert.ok(close(decodeStepSeconds(decode, 8, 2000), (c.k2 * 2000 + c.c2) * 8 + c.c3));
        assert.ok(Math.abs(kv.h - c.h) <= 0.05 * c.h, `h ${kv.h} vs ${c.h}`);
        assert.ok(Math.abs(prefill.k1 - c.k1) <= 0.05 * c.k1, `k1 ${prefill.k1} vs ${c.k1}`);
        assert.ok(Math.abs(decode.k2 - c.k2) <= 0.1 * c.k2, `k2 ${decode.k2} vs ${c.k2}`);
      },
    ),
    { numRuns: 40 },
  );
});

test('Eq. 4: the context limit is where the decode step reaches the ATGT target', () => {
  const decode = { k2: 1e-7, c2: 1e-4, c3: 0.01 };
  for (const b of [2, 8, 32]) {
    const limit = contextLimit(decode, b, 0.05);
    assert.ok(Math.abs(decodeStepSeconds(decode, b, limit / b) - 0.05) < 1e-12);
  }
  // By hand: (0.05 - 1e-4 x 10 - 0.01) / 1e-7 = 390,000 tokens.
  assert.ok(Math.abs(contextLimit(decode, 10, 0.05) - 390_000) < 1e-6);
  assert.ok(contextLimit(decode, 4, 0.05) > contextLimit(decode, 40, 0.05), 'shrinks as b grows');
});

test("a cost model's profile fits its own decode steps and prefills within 10%", () => {
  const costModel = costModelPreset('llama2-7b-h100');
  const fitted = costModelFits(costModel);
  for (const [b, l] of [
    [4, 300],
    [16, 1500],
    [64, 800],
  ] as const) {
    const truth = costModel.iterationTime({
      requests: b,
      newTokens: b,
      seqTokens: b * l,
      newTimesSeq: b * l,
    });
    const err = Math.abs(decodeStepSeconds(fitted.decode, b, l) - truth) / truth;
    assert.ok(err < 0.1, `decode b=${b} l=${l}: ${err}`);
  }
  for (const n of [300, 1500, 3000]) {
    const truth = costModel.prefillTime(n, 0);
    assert.ok(Math.abs(prefillSeconds(fitted.prefill, n) - truth) / truth < 0.1, `prefill ${n}`);
  }
});

test('a fit window keeps its prior until enough samples, then follows them; an implausible fit is refused', () => {
  const prior: PrefillFit = { k1: 1, c1: 0 };
  const window = new FitWindow<PrefillSample, PrefillFit>(prior, fitPrefill, (f) => f.k1 > 0, 8, 4);
  window.add({ inputTokens: 100, seconds: 0.2 });
  window.add({ inputTokens: 200, seconds: 0.3 });
  assert.deepEqual(window.current(), prior);
  window.add({ inputTokens: 300, seconds: 0.4 });
  window.add({ inputTokens: 400, seconds: 0.5 });
  const f = window.current();
  assert.ok(Math.abs(f.k1 - 0.001) < 1e-9 && Math.abs(f.c1 - 0.1) < 1e-9);
  // Falling times (a negative slope) keep the last plausible fit.
  for (const n of [100, 200, 300, 400, 500, 600, 700, 800])
    window.add({ inputTokens: n, seconds: 1 - n / 1000 });
  assert.deepEqual(window.current(), f);
  assert.equal(window.size, 8);
});
