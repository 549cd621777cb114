import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  checkPolicyOptions,
  createGlobalPolicy,
  describeGlobalPolicies,
  disaggregatedPolicyNames,
  globalPolicyNames,
  parsePolicyOption,
  policyEntry,
} from '../../../src/core/policies/registry.ts';
import type { GlobalPolicy, RouteDecision } from '../../../src/core/types.ts';
import { simpleCostModel } from '../../helpers/simple-cost-model.ts';

/**
 * A fixed script of routing, feedback, signals and ticks across 4 instances, long enough for E2's
 * window, rebalancing and replication and for every baseline's state to matter. Returns the decisions.
 */
function script(policy: GlobalPolicy): RouteDecision[] {
  const decisions: RouteDecision[] = [];
  for (let i = 0; i < 4; i++) policy.instanceAdded(i, { kvCapacityTokens: 400 }, 0);
  const open: { id: string; tokens: Uint32Array }[] = [];
  let now = 0;
  for (let n = 0; n < 240; n++) {
    now += 0.05;
    const hot = n % 3 === 0 ? 0 : n % 7; // one hot prefix, six colder ones
    const tokens = Uint32Array.from({ length: 60 + (n % 5) * 10 }, (_, i) =>
      i < 50 ? 1000 * hot + i : n * 100 + i,
    );
    const id = `r${n}`;
    decisions.push(policy.route({ id, tokens, arrival: now, outputLenHint: 8 }, now));
    policy.requestStarted(id, now);
    open.push({ id, tokens });
    if (n % 2 === 1) {
      const r = open.shift()!;
      policy.requestFirstToken(r.id, now);
      policy.requestFinished(r.id, now, { promptTokens: r.tokens.length, cachedTokens: 25, outputTokens: 8 });
    }
    if (n % 10 === 0) {
      for (let i = 0; i < 4; i++) {
        policy.loadSignal(
          i,
          { running: i, waiting: n % 4, queuedPrefillTokens: 30 * i, usedKvTokens: 100, freeKvTokens: 300 },
          now,
        );
      }
    }
    if (n % 20 === 0) policy.tick(now);
  }
  return decisions;
}

const context = { costModel: simpleCostModel(400), seed: 3 };

for (const name of globalPolicyNames) {
  test(`${name}: an option given as undefined means its default`, () => {
    const reference = script(createGlobalPolicy(name, context));
    for (const key of Object.keys(policyEntry(name).defaults)) {
      const decisions = script(createGlobalPolicy(name, context, { [key]: undefined }));
      assert.deepEqual(decisions, reference, `${name}: '${key}: undefined' changed the decisions`);
    }
  });

  test(`${name}: the registry's defaults are the policy's own`, () => {
    // The policy built by its factory with no options at all (its constructor's own defaults; only the
    // run's seed given) decides exactly as the registry's defaults make it decide.
    const row = policyEntry(name);
    const reference = script(createGlobalPolicy(name, context));
    const own = row.runSeed === undefined ? {} : { [row.runSeed]: context.seed };
    assert.deepEqual(script(row.create(own, context)), reference);
  });
}

test('the run seed reaches seeded policies and changes their choices', () => {
  const a = script(createGlobalPolicy('random', { ...context, seed: 1 })).map((d) => d.instance);
  const b = script(createGlobalPolicy('random', { ...context, seed: 2 })).map((d) => d.instance);
  assert.notDeepEqual(a, b);
});

test('options are checked by name and type; renamed ones get a hint', () => {
  assert.throws(
    () => checkPolicyOptions('e2', { autoscale: false }),
    /e2 option 'autoscale' was renamed 'prefixReplication'/,
  );
  assert.throws(() => checkPolicyOptions('e2', { pdBalance: false }), /was renamed 'phaseMix'/);
  assert.throws(
    () => checkPolicyOptions('e2', { bogus: 1 }),
    /unknown e2 option 'bogus'; valid: windowSeconds/,
  );
  assert.throws(() => checkPolicyOptions('round-robin', { x: 1 }), /round-robin has no options/);
  assert.throws(() => checkPolicyOptions('e2', { rebalance: 'yes' }), /'rebalance' must be a boolean/);
  assert.throws(() => createGlobalPolicy('e2', context, { windowSeconds: '3' }), /must be a number/);
  checkPolicyOptions('e2', { rebalance: false, windowSeconds: undefined });
});

test('--policy-option values are typed by the default', () => {
  assert.deepEqual(parsePolicyOption('e2.phaseMix=false'), { policy: 'e2', key: 'phaseMix', value: false });
  assert.deepEqual(parsePolicyOption('e2.windowSeconds=60'), {
    policy: 'e2',
    key: 'windowSeconds',
    value: 60,
  });
  assert.deepEqual(parsePolicyOption('least-load.tieBreak=lowest-id'), {
    policy: 'least-load',
    key: 'tieBreak',
    value: 'lowest-id',
  });
  assert.throws(() => parsePolicyOption('e2.autoscale=false'), /renamed 'prefixReplication'/);
  assert.throws(() => parsePolicyOption('e2.windowSeconds=soon'), /must be a number/);
  assert.throws(() => parsePolicyOption('e2.rebalance=1'), /must be true or false/);
  assert.throws(() => parsePolicyOption('nope.x=1'), /unknown policy 'nope'/);
  assert.throws(() => parsePolicyOption('e2'), /expected POLICY.OPTION=VALUE/);
});

test('every policy is described for --help with its options', () => {
  const lines = describeGlobalPolicies();
  assert.equal(lines.length, globalPolicyNames.length + disaggregatedPolicyNames.length);
  for (const name of ['distserve', 'splitwise', 'prefix-pd', 'tetriinfer'])
    assert.ok(!globalPolicyNames.includes(name as never), "'all' is the colocated policies");
  const line = (name: string) => lines.find((l) => l.startsWith(`${name}: `)) ?? '';
  assert.match(line('distserve'), /^distserve: DistServe/);
  assert.match(line('splitwise'), /^splitwise: Splitwise .*\[promptQueueTokens=8192, /);
  assert.match(
    line('prefix-pd'),
    /^prefix-pd: prefix-aware .*\[prefillPolicy=e2, colocatedPrefillSeconds=0.1, /,
  );
  assert.match(line('aladdin'), /^aladdin: Aladdin .*\[gamma=0.5, theta=0.9, /);
  assert.match(
    line('tetriinfer'),
    /^tetriinfer: TetriInfer .*\[chunkSize=512, padChunks=true, prefillOrder=sjf, /,
  );
  assert.match(lines[0]!, /^e2: .*\[windowSeconds=180, .*prefixReplication=true/);
});
