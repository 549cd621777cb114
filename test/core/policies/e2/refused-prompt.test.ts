import assert from 'node:assert/strict';
import { test } from 'node:test';
import { E2Policy } from '../../../../src/core/policies/e2/policy.ts';
import type { PrefixTreePolicy } from '../../../../src/core/policies/e2/tree-costs.ts';
import { E2PlusPolicy } from '../../../../src/core/policies/e2-plus/policy.ts';
import type { InstanceCost, InstanceId, Tokens } from '../../../../src/core/types.ts';
import { concat, seq, simpleCostModel } from '../../../helpers/simple-cost-model.ts';

// A request that fails before its first token (the replica refused it, or died) left nothing in the
// instance's cache: the prefix tree must not keep believing the prompt is cached there. Before the
// fix the mark stayed, and a follow-up sharing the prompt was priced as a hit on the refusing instance.

const policies: [string, () => PrefixTreePolicy<InstanceCost>][] = [
  ['e2', () => new E2Policy({ costModel: simpleCostModel() })],
  ['e2-plus', () => new E2PlusPolicy({ costModel: simpleCostModel() })],
];

function withInstances(make: () => PrefixTreePolicy<InstanceCost>, n: number) {
  const p = make();
  for (let i = 0; i < n; i++) p.instanceAdded(i, { kvCapacityTokens: 100_000 }, 0);
  return p;
}

function cachedOn(p: PrefixTreePolicy<InstanceCost>, tokens: Tokens, instance: InstanceId): number {
  p.tree.match(tokens);
  return p.tree.cachedOn(instance);
}

const done = (tokens: Tokens) => ({ promptTokens: tokens.length, cachedTokens: 0, outputTokens: 4 });

for (const [name, make] of policies) {
  test(`${name}: a request failed before its first token leaves its prompt uncached where it was routed`, () => {
    const p = withInstances(make, 2);
    const prompt = seq(300, 1);
    const d = p.route({ id: 'a', tokens: prompt, arrival: 0 }, 0);
    assert.equal(cachedOn(p, prompt, d.instance), 300, 'routing marks it cached');
    p.requestStarted('a', 0.1);
    p.requestFailed('a', 0.2);
    assert.equal(cachedOn(p, prompt, d.instance), 0);
    p.tree.checkInvariants();
  });

  test(`${name}: a failure after the first token keeps the prompt cached (the engine computed it)`, () => {
    const p = withInstances(make, 2);
    const prompt = seq(300, 1);
    const d = p.route({ id: 'a', tokens: prompt, arrival: 0 }, 0);
    p.requestStarted('a', 0.1);
    p.requestFirstToken('a', 0.5);
    p.requestFailed('a', 0.6);
    assert.equal(cachedOn(p, prompt, d.instance), 300);
  });

  test(`${name}: what was cached before the failed request stays cached`, () => {
    const p = withInstances(make, 1);
    const shared = seq(200, 1);
    p.route({ id: 'first', tokens: shared, arrival: 0 }, 0);
    p.requestStarted('first', 0);
    p.requestFirstToken('first', 0.2);
    p.requestFinished('first', 1, done(shared));
    const longer = concat(shared, seq(100, 5_000));
    const d = p.route({ id: 'b', tokens: longer, arrival: 2 }, 2);
    assert.equal(d.matchedTokens, 200);
    p.requestFailed('b', 2.1);
    assert.equal(cachedOn(p, longer, 0), 200);
    p.tree.checkInvariants();
  });

  test(`${name}: a request routed later through the same prompt keeps it cached`, () => {
    const p = withInstances(make, 1);
    const prompt = seq(300, 1);
    p.route({ id: 'a', tokens: prompt, arrival: 0 }, 0);
    p.route({ id: 'b', tokens: prompt, arrival: 1 }, 1);
    p.requestFailed('a', 1.5);
    assert.equal(cachedOn(p, prompt, 0), 300, 'b is in flight through it');
    p.requestStarted('b', 1.6);
    p.requestFirstToken('b', 2);
    p.requestFinished('b', 3, done(prompt));
    assert.equal(cachedOn(p, prompt, 0), 300, 'b computed it');
  });
}
