import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Random } from '../../src/core/random.ts';
import { PoissonArrivals } from '../../src/workloads/arrivals.ts';
import { createWorkload, workloadNames } from '../../src/workloads/registry.ts';

describe('PoissonArrivals', () => {
  it('gives non-decreasing times with mean gap 1/rps and exponential spread', () => {
    const rps = 8;
    const arrivals = new PoissonArrivals(rps, new Random(1));
    const count = 20000;
    let previous = 0;
    let sumGaps = 0;
    let sumSquares = 0;
    for (let i = 0; i < count; i++) {
      const time = arrivals.next();
      assert.ok(time >= previous);
      sumGaps += time - previous;
      sumSquares += (time - previous) ** 2;
      previous = time;
    }
    const mean = sumGaps / count;
    // The standard error of the mean gap is (1/rps)/sqrt(20000), 0.7%: 3% is over four of them.
    assert.ok(Math.abs(mean * rps - 1) < 0.03, `mean gap ${mean}`);
    // Exponential gaps: the standard deviation equals the mean.
    const std = Math.sqrt(sumSquares / count - mean * mean);
    assert.ok(Math.abs(std / mean - 1) < 0.05, `gap std ${std}`);
  });

  it('rejects a rate that is not positive', () => {
    assert.throws(() => new PoissonArrivals(0, new Random(1)), /rps/);
    assert.throws(() => new PoissonArrivals(Number.NaN, new Random(1)), /rps/);
  });
});

describe('workload arrivals', () => {
  for (const name of workloadNames) {
    it(`${name}: arrive in order at about rps`, () => {
      const rps = 20;
      const count = 3000;
      // Streamed, not collected: only the arrival times matter here.
      let previous = 0;
      let first = Number.NaN;
      for (const request of createWorkload(name, { requests: count, rps, seed: 5 })) {
        assert.ok(request.arrival >= previous);
        if (Number.isNaN(first)) first = request.arrival;
        previous = request.arrival;
      }
      assert.ok(first > 0);
      // Mean gap = last arrival / count; its standard error is 1.8% at 3000 requests.
      const meanGap = previous / count;
      assert.ok(Math.abs(meanGap * rps - 1) < 0.08, `mean gap ${meanGap}`);
    });
  }
});
