import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { averageTtft, breakEvenSpeedup, perGpuRateWithin, rateWithin } from '../../src/search/intra-op.ts';

const service = fc.double({ min: 0.001, max: 1, noNaN: true });
const close = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b));

describe("DistServe's Eq. 1 and Eq. 3", () => {
  test('Eq. 3 is Eq. 1 with service D / K', () => {
    fc.assert(
      fc.property(
        service,
        fc.double({ min: 1, max: 2, noNaN: true }),
        fc.double({ min: 0, max: 0.99, noNaN: true }),
        (d, k, load) => {
          const rate = (load * k) / d;
          const eq3 = d / k + (rate * d * d) / (2 * k * (k - rate * d));
          assert.ok(close(averageTtft(d / k, rate), eq3));
        },
      ),
    );
  });

  test('rateWithin is the rate whose average TTFT is the target, and falls as the service grows', () => {
    fc.assert(
      fc.property(service, fc.double({ min: 0.01, max: 5, noNaN: true }), (d, target) => {
        const r = rateWithin(d, target);
        if (d >= target) return assert.equal(r, 0);
        assert.ok(close(averageTtft(d, r), target));
        assert.ok(rateWithin(d * 1.1, target) < r);
      }),
    );
  });

  test('at the break-even speed-up the intra-op instance matches one GPU per GPU; above it, it wins', () => {
    fc.assert(
      fc.property(
        service,
        fc.double({ min: 1.05, max: 8, noNaN: true }),
        fc.integer({ min: 2, max: 8 }),
        (d, slack, gpus) => {
          const target = d * slack;
          const k = breakEvenSpeedup(d, target, gpus);
          if (k === undefined)
            return assert.ok(perGpuRateWithin(d, target, gpus, gpus) < rateWithin(d, target));
          assert.ok(k <= gpus);
          assert.ok(
            Math.abs(perGpuRateWithin(d, target, gpus, k) - rateWithin(d, target)) <=
              1e-4 * rateWithin(d, target),
          );
          if (k * 1.01 <= gpus)
            assert.ok(perGpuRateWithin(d, target, gpus, k * 1.01) > rateWithin(d, target));
        },
      ),
    );
  });
});
