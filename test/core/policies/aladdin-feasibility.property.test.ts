import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { generatedEstimate, type Job, meetsKv } from '../../../src/core/policies/aladdin/feasibility.ts';
import type { AladdinFits } from '../../../src/core/provisioning/fits.ts';

// Constraint (e), KV per future iteration: the check at the iterations just before a request ends
// agrees with the peak over every iteration, and adding a request never makes a worker fit.

const fits = (h: number, j: number): AladdinFits => ({
  kv: { h, j },
  prefill: { k1: 1e-4, c1: 0.01 },
  decode: { k2: 1e-7, c2: 1e-4, c3: 0.01 },
});

const jobArb = fc.record({
  inputTokens: fc.integer({ min: 1, max: 400 }),
  predicted: fc.integer({ min: 1, max: 60 }),
  decodedFor: fc.option(fc.integer({ min: 0, max: 50 }), { nil: undefined }),
});

function jobs(
  specs: readonly { inputTokens: number; predicted: number; decodedFor?: number | undefined }[],
): Job[] {
  return specs.map((s, i) => ({
    id: `j${i}`,
    inputTokens: s.inputTokens,
    predicted: s.predicted,
    arrival: 0,
    ttft: 1,
    atgt: 0.05,
    stolen: 0,
    ...(s.decodedFor === undefined ? {} : { startedAt: 0, firstTokenAt: 10 - s.decodedFor * 0.01 }),
  }));
}

/** The peak KV over every future iteration, by brute force. */
function peak(f: AladdinFits, list: readonly Job[], now: number, step: number): number {
  let best = 0;
  for (let k = 0; k < 200; k++) {
    let kv = 0;
    for (const j of list) {
      const g = generatedEstimate(j, now, step);
      if (Math.max(1, j.predicted - g) > k) kv += f.kv.h * (j.inputTokens + g + k) + f.kv.j;
    }
    best = Math.max(best, kv);
  }
  return best;
}

test('(e) agrees with the brute-force peak, and a further request never makes a worker fit', () => {
  fc.assert(
    fc.property(
      fc.array(jobArb, { maxLength: 8 }),
      jobArb,
      fc.integer({ min: 100, max: 3000 }),
      fc.double({ min: 0.5, max: 2, noNaN: true }),
      fc.integer({ min: 0, max: 16 }),
      (specs, extra, capacity, h, j) => {
        const f = fits(h, j);
        const list = jobs(specs);
        const now = 10;
        const step = 0.01;
        assert.equal(meetsKv(f, list, now, step, capacity), peak(f, list, now, step) <= capacity);
        const more = jobs([...specs, extra]);
        if (!meetsKv(f, list, now, step, capacity))
          assert.equal(meetsKv(f, more, now, step, capacity), false);
      },
    ),
    { numRuns: 200 },
  );
});
