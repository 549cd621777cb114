import assert from 'node:assert/strict';
import { test } from 'node:test';
import { costModelPreset } from '../../src/core/cost-model/presets.ts';
import { createGlobalPolicy } from '../../src/core/policies/registry.ts';
import { simulate } from '../../src/sim/simulator.ts';
import { createWorkload } from '../../src/workloads/registry.ts';
import { contractViolations, RecordingPolicy } from '../helpers/recording-policy.ts';

// The simulator is one face of the policy contract (docs/design.md): a recording policy sees every
// request's calls in the contract's order, evictions stamped no later than their report, and every
// kind of feedback the contract promises (the gateway's side is test/gateway/feedback.test.ts).
test('the simulator gives every policy the contract feedback in order', () => {
  // A small KV capacity, so engines must evict and preempt.
  const costModel = costModelPreset('mistral-7b-a6000', { kvCapacityTokens: 40_000 });
  const policy = new RecordingPolicy(createGlobalPolicy('e2', { costModel, seed: 1 }));
  const result = simulate({
    policy,
    instances: 3,
    costModel,
    engine: { queuePolicy: 'lpm' },
    requests: createWorkload('video-qa', { requests: 60, rps: 2, seed: 3 }),
  });
  assert.equal(result.records.length, 60);
  for (const r of result.records) assert.deepEqual(contractViolations(policy.of(r.id)), [], r.id);
  const evictions = policy.evictions();
  assert.ok(evictions.length > 0, 'the small cache forced evictions');
  for (const e of evictions)
    assert.ok(e.evictedAt !== undefined && e.evictedAt <= e.now, 'stamped at or before its report');
  const methods = new Set(policy.calls.map((c) => c.method));
  for (const m of [
    'instanceAdded',
    'route',
    'requestStarted',
    'requestFirstToken',
    'requestFinished',
    'instanceEvicted',
    'loadSignal',
    'tick',
  ]) {
    assert.ok(methods.has(m as never), `the simulator never called ${m}`);
  }
});

test('contractViolations names what breaks the order', () => {
  const at = (method: string, now: number) => ({ method, id: 'a', now }) as never;
  assert.deepEqual(
    contractViolations([
      at('route', 0),
      at('requestStarted', 1),
      at('requestFirstToken', 2),
      at('requestFinished', 3),
    ]),
    [],
  );
  assert.deepEqual(
    contractViolations([
      at('route', 0),
      at('requestFirstToken', 1),
      at('requestStarted', 2),
      at('requestFinished', 3),
    ]),
    ['requestStarted after requestFirstToken'],
  );
  assert.deepEqual(contractViolations([at('route', 1), at('requestStarted', 0), at('requestFailed', 2)]), [
    'requestStarted at 0 before the previous call at 1',
  ]);
  assert.deepEqual(contractViolations([at('route', 0), at('requestStarted', 1)]), [
    'ended at requestStarted',
  ]);
});
