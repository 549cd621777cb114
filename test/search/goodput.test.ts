import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { highestPassingRate } from '../../src/search/capacity.ts';
import { goodput } from '../../src/search/goodput.ts';

/** A synthetic system whose SLO attainment falls linearly from 1 at 0 req/s to 0 at 2 × capacity. */
function system(capacity: number) {
  return (rps: number) => ({
    sloAttainment: { ttft: 1, tpot: 1, both: Math.max(0, 1 - rps / (2 * capacity)) },
  });
}

describe('goodput', () => {
  it('finds the rate where attainment crosses 90%, within the tolerance', () => {
    // Crossing: 1 - r / 20 = 0.9 at r = 2.
    const result = goodput(system(10), { low: 0.5, high: 8, tolerance: 0.01 });
    assert.ok(result.bracketed);
    assert.ok(result.rps <= 2 && result.rps > 2 - 0.01, `rps ${result.rps}`);
    for (const probe of result.probes) assert.equal(probe.attainment, Math.max(0, 1 - probe.rps / 20));
  });

  it('brackets by doubling when high still meets the target', () => {
    const result = goodput(system(100), { low: 1, high: 2, tolerance: 0.05 });
    // Crossing at 20: high doubles 2, 4, 8, 16, 32.
    assert.deepEqual(
      result.probes.slice(0, 6).map((p) => p.rps),
      [1, 2, 4, 8, 16, 32],
    );
    assert.ok(result.rps <= 20 && result.rps > 19.95, `rps ${result.rps}`);
  });

  it('honours another target', () => {
    const result = goodput(system(10), { low: 1, high: 16, target: 0.5, tolerance: 0.001 });
    assert.ok(result.rps <= 10 && result.rps > 9.999);
  });

  it('is deterministic', () => {
    const options = { low: 0.3, high: 7, tolerance: 0.02 };
    assert.deepEqual(goodput(system(3), options), goodput(system(3), options));
  });

  it('reports 0 when even low misses, and an unbracketed lower bound when nothing does', () => {
    assert.deepEqual(goodput(system(0.1), { low: 1 }), {
      rps: 0,
      bracketed: true,
      probes: [{ rps: 1, attainment: 0 }],
    });
    const never = goodput(() => ({ sloAttainment: { ttft: 1, tpot: 1, both: 1 } }), {
      low: 1,
      maxDoublings: 3,
    });
    assert.deepEqual(never, {
      rps: 16,
      bracketed: false,
      probes: [1, 2, 4, 8, 16].map((rps) => ({ rps, attainment: 1 })),
    });
  });

  it('needs a summary with an SLO and a sane bracket', () => {
    assert.throws(() => goodput(() => ({}), { low: 1 }), /must summarize with an slo/);
    assert.throws(() => goodput(system(1), { low: 0 }), /low must be a positive rate/);
    assert.throws(() => goodput(system(1), { low: 2, high: 1 }), /must exceed low/);
  });
});

describe('highestPassingRate', () => {
  it('brackets any pass/fail test and stops within relativeTolerance of the failing end', () => {
    const probed: number[] = [];
    const result = highestPassingRate(
      (rps) => {
        probed.push(rps);
        return rps <= 10;
      },
      { low: 1, relativeTolerance: 0.1 },
    );
    assert.equal(result.bracketed, true);
    assert.ok(result.rps <= 10 && result.rps > 10 * 0.9 - 1e-9, `${result.rps}`);
    assert.deepEqual(probed.slice(0, 5), [1, 2, 4, 8, 16]);
    assert.deepEqual(
      highestPassingRate(() => false, { low: 1 }),
      { rps: 0, bracketed: true },
    );
  });
});
