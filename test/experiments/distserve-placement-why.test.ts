import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { costModelPreset } from '../../src/core/cost-model/presets.ts';
import { longestWithin, phaseCeilings } from '../../src/experiments/distserve-placement-why.ts';

describe('distserve-placement: zero-load ceilings', () => {
  const tp1 = costModelPreset('roofline:opt-13b@a100-80g');

  test('longestWithin is the longest prompt whose prefill alone fits the time', () => {
    fc.assert(
      fc.property(fc.double({ min: 0.01, max: 2, noNaN: true }), (seconds) => {
        const n = longestWithin(tp1, seconds);
        if (n > 0) assert.ok(tp1.prefillTime(n, 0) <= seconds);
        assert.ok(tp1.prefillTime(n + 1, 0) > seconds);
      }),
    );
  });

  test('more TP reaches longer prompts, and the shares only grow as the filters loosen the target', () => {
    const rows = phaseCeilings({
      model: 'opt-13b',
      gpu: 'a100-80g',
      tensorParallel: [1, 2, 4],
      workload: 'sharegpt-like',
      requests: 300,
      seed: 0,
      ttft: 0.2,
      batch: 128,
    });
    assert.deepEqual(
      rows.map((r) => r.tp),
      [1, 2, 4],
    );
    assert.equal(rows[0]!.allReduceShare, 0, 'one GPU has no all-reduce');
    for (let i = 1; i < rows.length; i++) {
      assert.ok(rows[i]!.longest > rows[i - 1]!.longest);
      assert.ok(rows[i]!.within >= rows[i - 1]!.within);
      assert.ok(rows[i]!.kvTokens > rows[i - 1]!.kvTokens);
      assert.ok(rows[i]!.allReduceShare > 0);
    }
    for (const r of rows) {
      assert.ok(r.withinFitMfu >= r.within, 'a higher MFU reaches longer prompts');
      assert.ok(r.withinBoth >= r.withinFitMfu - 1e-12 || r.withinBoth >= r.withinOptContext - 1e-12);
      assert.equal(
        r.longest,
        longestWithin(costModelPreset(`roofline:opt-13b@a100-80g${r.tp === 1 ? '' : `x${r.tp}`}`), 0.2),
      );
    }
  });
});
