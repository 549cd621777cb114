import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TetriInferPolicy } from '../../../../src/core/policies/disagg/tetriinfer/policy.ts';
import { createGlobalPolicy } from '../../../../src/core/policies/registry.ts';
import type { Role } from '../../../../src/core/types.ts';
import { seq } from '../../../helpers/simple-cost-model.ts';

/** Instances 0, 1 prefill; 2, 3 decode (KV capacity 10,000 tokens each). */
const fleet = (options: ConstructorParameters<typeof TetriInferPolicy>[0] = {}) => {
  const policy = new TetriInferPolicy({ flipIdleSeconds: 0, ...options });
  const roles: Role[] = ['prefill', 'prefill', 'decode', 'decode'];
  for (const [i, role] of roles.entries()) policy.instanceAdded(i, { kvCapacityTokens: 10_000, role }, 0);
  return policy;
};

const route = (p: TetriInferPolicy, id: string, prompt: number, predicted: number, now = 0) =>
  p.route({ id, tokens: seq(prompt, 1), arrival: now, predictedOutputTokens: predicted }, now);

/** Prefill ends and the dispatcher picks the decode instance. */
const dispatch = (p: TetriInferPolicy, id: string, prompt: number, now: number) => {
  p.requestStarted(id, now);
  p.requestFirstToken(id, now);
  return p.routeDecode(id, 0, prompt, now);
};

describe('tetriinfer policy by hand', () => {
  it('the global scheduler sends each prompt to the prefill instance with the fewest queued prompt tokens', () => {
    const p = fleet();
    const a = route(p, 'a', 1000, 10);
    assert.deepEqual(
      [a.instance, route(p, 'a2', 100, 10).instance, route(p, 'b', 300, 10).instance],
      [0, 1, 1],
    );
    assert.equal(a.decode, 'at-kv-ready');
    assert.deepEqual([p.promptQueueTokens(0), p.promptQueueTokens(1)], [1000, 400]);
    // a's prefill ends: its prompt leaves instance 0's queue.
    p.requestFirstToken('a', 1);
    assert.equal(p.promptQueueTokens(0), 0);
    assert.equal(route(p, 'c', 50, 10).instance, 0);
  });

  it('the dispatcher reads the last broadcast: dispatches between broadcasts do not see each other', () => {
    const p = fleet({ loadBroadcastSeconds: 0.1 });
    // Two heavy decodes within one broadcast period: both see empty loads.
    route(p, 'h1', 100, 500);
    route(p, 'h2', 100, 500);
    const first = dispatch(p, 'h1', 100, 0);
    const second = dispatch(p, 'h2', 100, 0.05);
    // Two instances, two random picks of α = {2, 3} with equal ratios and demands: the first pick wins,
    // which is random; what matters here is that nothing of h1 is seen yet.
    assert.ok([2, 3].includes(first) && [2, 3].includes(second));
    // After the period the broadcast carries both: a light decode goes where the heavy:light ratio,
    // with it, is lower.
    route(p, 'l', 100, 10);
    const where = dispatch(p, 'l', 100, 0.2);
    if (first !== second) assert.ok([2, 3].includes(where));
    else assert.notEqual(where, first); // 1 heavy : 1 light beats 2 heavy : 1 light
  });

  it('an instance without room for the predicted KV is left out (α), the other taken', () => {
    const p = fleet({ loadBroadcastSeconds: 0 });
    route(p, 'big', 4000, 5000);
    const big = dispatch(p, 'big', 4000, 0); // 9,000 predicted tokens on one instance
    route(p, 'next', 1000, 1000);
    assert.equal(dispatch(p, 'next', 1000, 1), big === 2 ? 3 : 2);
    // big finishes: its demand leaves, both instances are in α again.
    p.requestFinished('big', 2, { promptTokens: 4000, cachedTokens: 0, outputTokens: 5000 });
    assert.equal(p.inflight(big), 0);
  });

  it('refuses a fleet without prefill and decode instances with one line', () => {
    const p = new TetriInferPolicy();
    p.instanceAdded(0, { kvCapacityTokens: 1000 }, 0);
    assert.throws(() => route(p, 'a', 10, 10), /tetriinfer needs a disaggregated fleet/);
  });

  it('flips an idle prefill instance to decode through fleetRequests, after draining it', () => {
    const p = fleet({ flipIdleSeconds: 60, flipDelaySeconds: 0.006, loadBroadcastSeconds: 0 });
    // Instance 0 keeps busy; 1 stays idle; both decode instances are busy.
    route(p, 'p', 100, 10);
    for (const id of ['d1', 'd2']) {
      route(p, id, 100, 10);
      dispatch(p, id, 100, 0); // the second sees the first: equal ratios, the lower demand
    }
    assert.deepEqual([p.inflight(2), p.inflight(3)], [1, 1]);
    assert.deepEqual([p.inflight(0), p.inflight(1)], [1, 0]);
    assert.deepEqual(p.fleetRequests(0), []);
    assert.deepEqual(p.fleetRequests(60), []);
    assert.equal(p.isFlipping(1), true);
    // No new prompt goes to it while it flips.
    assert.equal(route(p, 'q', 10, 10).instance, 0);
    assert.deepEqual(p.fleetRequests(60.01), [{ action: 'role', instance: 1, role: 'decode' }]);
  });

  it('the registry builds it with the paper defaults and checks ranges with one line', () => {
    assert.equal(createGlobalPolicy('tetriinfer', { costModel: undefined as never }).name, 'tetriinfer');
    assert.throws(() => new TetriInferPolicy({ chunkSize: 0 }), /tetriinfer: chunkSize must be/);
    assert.throws(
      () => new TetriInferPolicy({ dispatch: 'jsq' as 'random' }),
      /dispatch must be power-of-two, random or imbalance/,
    );
  });
});
