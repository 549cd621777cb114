import assert from 'node:assert/strict';
import { test } from 'node:test';
import { groupPolicyOptions } from '../../src/core/policies/registry.ts';
import { buildEachOnce, withPolicyOptions } from '../../src/experiments/policy-options.ts';
import { findExperiment } from '../../src/experiments/registry.ts';

// `preble experiment --policy-option`: a variant of a report without editing a default.

test('--policy-option values are laid over each cell of that policy, over its own options; other cells are untouched', () => {
  const cells = findExperiment('ablation').cells({ requests: 10, seed: 0 });
  const stepped = cells.filter((c) => c.spec.policyOptions !== undefined && c.spec.policy === 'e2');
  assert.ok(stepped.length > 0, 'the ablation has e2 cells with options of their own');
  const byPolicy = groupPolicyOptions(['e2.windowSeconds=60', 'e2.windowSeconds=90']);
  const varied = withPolicyOptions(cells, byPolicy);
  assert.equal(varied.length, cells.length);
  for (const [i, cell] of varied.entries()) {
    const before = cells[i]!;
    if (before.spec.policy !== 'e2') {
      assert.equal(cell, before);
      continue;
    }
    // The later value of one option wins; the step's own options stay.
    assert.deepEqual(cell.spec.policyOptions, { ...before.spec.policyOptions, windowSeconds: 90 });
    assert.equal(before.spec.policyOptions?.windowSeconds, undefined, 'the planned cell is not changed');
    assert.equal(cell.spec.requests, before.spec.requests);
  }
});

test('groupPolicyOptions types each value by its default and refuses what the caller does not run', () => {
  const byPolicy = groupPolicyOptions([
    'e2-plus.latencyPower=1',
    'e2-plus.displacement=false',
    'e2.phaseMix=false',
  ]);
  assert.deepEqual(byPolicy.get('e2-plus'), { latencyPower: 1, displacement: false });
  assert.deepEqual(byPolicy.get('e2'), { phaseMix: false });
  assert.throws(
    () =>
      groupPolicyOptions(['cache-aware.balanceAbsThreshold=4'], (text, policy) => {
        if (policy !== 'e2') throw new Error(`${text}: not run`);
      }),
    /^Error: cache-aware\.balanceAbsThreshold=4: not run$/,
  );
});

test('buildEachOnce refuses an option that the policy constructor refuses, before anything runs', () => {
  const cells = findExperiment('preble-e2e').cells({
    requests: 10,
    seed: 0,
    only: ['e2-plus', 'round-robin'],
  });
  const ok = withPolicyOptions(cells, groupPolicyOptions(['e2-plus.latencyPower=1']));
  buildEachOnce(ok, ['e2-plus']);
  const bad = withPolicyOptions(cells, groupPolicyOptions(['e2-plus.latencyPower=0.5']));
  assert.throws(
    () => buildEachOnce(bad, ['e2-plus']),
    /^Error: e2-plus option 'latencyPower' must be >= 1, got 0\.5$/,
  );
});
