import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SplitwisePolicy } from '../../../src/core/policies/disagg/splitwise.ts';
import { createGlobalPolicy } from '../../../src/core/policies/registry.ts';
import type { Role, RouteDecision } from '../../../src/core/types.ts';
import { seq, simpleCostModel } from '../../helpers/simple-cost-model.ts';

/** Instances 0, 1 prompt (prefill), 2, 3 token (decode), 4 mixed. */
const fleet = (options: ConstructorParameters<typeof SplitwisePolicy>[0] = {}) => {
  const policy = new SplitwisePolicy(options);
  const roles: Role[] = ['prefill', 'prefill', 'decode', 'decode', 'mixed'];
  for (const [i, role] of roles.entries()) policy.instanceAdded(i, { kvCapacityTokens: 100_000, role }, 0);
  return policy;
};

const route = (p: SplitwisePolicy, id: string, promptTokens: number, outputLenHint?: number) =>
  p.route(
    {
      id,
      tokens: seq(promptTokens, 1),
      arrival: 0,
      ...(outputLenHint === undefined ? {} : { outputLenHint }),
    },
    0,
  );

const pair = (d: RouteDecision) => [d.instance, d.decode, d.branch, d.transferMode];

test('splitwise by hand: the (prompt, token) pair by the shortest pending-token queues, chosen at arrival', () => {
  const p = fleet();
  // a: all queues empty: the first prompt and token machines. 1000 prompt tokens: layer-wise.
  assert.deepEqual(pair(route(p, 'a', 1000, 100)), [0, 2, 'prompt-token-pair', 'layer-wise']);
  // b: prompt queues 1000 | 0 -> 1; decode queues 100 | 0 -> 3. 200 tokens: serialized.
  assert.deepEqual(pair(route(p, 'b', 200, 100)), [1, 3, 'prompt-token-pair', 'serialized']);
  // c: prompt queues 1000 | 200 -> 1; decode queues 100 | 100: a tie rotates past 3 -> 2.
  // No hint: the default output (129 tokens). 511 tokens: still serialized.
  assert.deepEqual(pair(route(p, 'c', 511)), [1, 2, 'prompt-token-pair', 'serialized']);
  assert.equal(p.promptQueueTokens(1), 711);
  assert.equal(p.decodeQueueTokens(2), 229);
  // b's prefill ends: its prompt tokens leave machine 1's queue; its decode work stays on 3.
  p.requestStarted('b', 1);
  p.requestFirstToken('b', 1);
  assert.equal(p.promptQueueTokens(1), 511);
  // kvReady moves b's in-flight count from its prompt machine to its token machine.
  assert.equal(p.inflight(1), 2);
  p.kvReady('b', 1, seq(200, 1), 1);
  assert.equal(p.inflight(1), 1);
  assert.equal(p.inflight(3), 1);
  // d: prompt queues 1000 | 511 -> 1; decode queues 229 | 100 -> 3; exactly 512 tokens: layer-wise.
  assert.deepEqual(pair(route(p, 'd', 512, 50)), [1, 3, 'prompt-token-pair', 'layer-wise']);
  // b finishes: its 100 decode tokens leave machine 3; a repeated report changes nothing.
  for (let k = 0; k < 2; k++)
    p.requestFinished('b', 2, { promptTokens: 200, cachedTokens: 0, outputTokens: 100 });
  assert.equal(p.decodeQueueTokens(3), 50);
  assert.equal(p.inflight(3), 0);
});

test('splitwise by hand: a prompt or token queue past its threshold sends the request colocated to the least-loaded mixed instance', () => {
  const p = fleet({ promptQueueTokens: 2000, tokenQueueTokens: 1000, borrow: false });
  assert.deepEqual(pair(route(p, 'a', 1500, 10)), [0, 2, 'prompt-token-pair', 'layer-wise']);
  assert.deepEqual(pair(route(p, 'b', 1500, 10)), [1, 3, 'prompt-token-pair', 'layer-wise']);
  // c: the shortest prompt queue (0, 1500) would hold 2100 > 2000: the mixed instance, colocated.
  const c = route(p, 'c', 600, 10);
  assert.deepEqual(pair(c), [4, undefined, 'mixed-pool', undefined]);
  assert.equal(p.promptQueueTokens(4), 600);
  // d: prompt 0 would hold 1500 + 1500 > 2000, and so would the mixed instance (600 + 1500): the pair.
  assert.deepEqual(pair(route(p, 'd', 1500, 10)), [0, 2, 'prompt-token-pair', 'layer-wise']);
  // The colocated request's queues drain at its first token (prompt) and finish (decode).
  p.requestFirstToken('c', 1);
  assert.equal(p.promptQueueTokens(4), 0);
  assert.equal(p.decodeQueueTokens(4), 10);
  // e: small prompt, 995 tokens to decode: token 3 (10 pending) would hold 1005 > 1000, and so would
  // the mixed instance while c decodes there: the pair. Once c finished, the mixed instance takes it.
  assert.deepEqual(pair(route(p, 'e', 100, 995)), [1, 3, 'prompt-token-pair', 'serialized']);
  p.requestFinished('c', 2, { promptTokens: 600, cachedTokens: 0, outputTokens: 10 });
  assert.deepEqual(pair(route(p, 'f', 100, 995)), [4, undefined, 'mixed-pool', undefined]);
  assert.equal(p.promptQueueTokens(4), 100);
  assert.equal(p.decodeQueueTokens(4), 995);
});

test('splitwise: a token machine whose polled free KV cannot hold the request overflows to the mixed pool', () => {
  const p = fleet();
  const signal = (freeKvTokens: number) => ({
    running: 1,
    waiting: 0,
    queuedPrefillTokens: 0,
    usedKvTokens: 100_000 - freeKvTokens,
    freeKvTokens,
  });
  p.loadSignal(2, signal(500), 0);
  p.loadSignal(3, signal(100_000), 0);
  // Token machine 2 is first in turn (both empty) but holds 500 free tokens: 400 + 129 does not fit.
  assert.deepEqual(pair(route(p, 'a', 400)), [4, undefined, 'mixed-pool', undefined]);
  p.loadSignal(2, signal(100_000), 0.1);
  assert.deepEqual(pair(route(p, 'b', 400)), [0, 2, 'prompt-token-pair', 'serialized']);
});

test('splitwise: an empty pool sends requests to the mixed pool; without one, no instance', () => {
  const p = fleet();
  p.instanceDrained(2, 0);
  p.instanceDrained(3, 0);
  assert.deepEqual(pair(route(p, 'a', 100)), [4, undefined, 'mixed-pool', undefined]);
  p.instanceDrained(4, 0);
  assert.throws(() => route(p, 'b', 100), /no instance is available/);
});

test('splitwise: transferBySize=false leaves the fleet transfer mode; the registry builds it with its defaults', () => {
  const p = fleet({ transferBySize: false });
  assert.deepEqual(pair(route(p, 'a', 100)), [0, 2, 'prompt-token-pair', undefined]);
  const built = createGlobalPolicy(
    'splitwise',
    { costModel: simpleCostModel() },
    { serializedBelowTokens: 50 },
  );
  built.instanceAdded(0, { kvCapacityTokens: 1000, role: 'prefill' }, 0);
  built.instanceAdded(1, { kvCapacityTokens: 1000, role: 'decode' }, 0);
  assert.equal(built.route({ id: 'a', tokens: seq(100, 1), arrival: 0 }, 0).transferMode, 'layer-wise');
});

test('splitwise by hand: with no mixed pool, an overflowing prompt queue borrows a token machine into the mixed pool and gives it back when its colocated work drains', () => {
  const p = new SplitwisePolicy({ promptQueueTokens: 2000 });
  const roles: Role[] = ['prefill', 'prefill', 'decode', 'decode'];
  for (const [i, role] of roles.entries()) p.instanceAdded(i, { kvCapacityTokens: 100_000, role }, 0);
  assert.deepEqual(pair(route(p, 'a', 1500, 10)), [0, 2, 'prompt-token-pair', 'layer-wise']);
  assert.deepEqual(pair(route(p, 'b', 1500, 10)), [1, 3, 'prompt-token-pair', 'layer-wise']);
  assert.deepEqual(p.fleetRequests(0), []);
  // c: prompt machine 0 would queue 2100 > 2000 and there is no mixed pool: the opposite pool (token
  // machines 2 and 3, 10 decode tokens each; the tie goes to the first) lends machine 2, which runs c whole.
  assert.deepEqual(pair(route(p, 'c', 600, 10)), [2, undefined, 'borrowed', undefined]);
  assert.deepEqual(p.fleetRequests(0), [{ action: 'role', instance: 2, role: 'mixed' }]);
  assert.deepEqual(p.fleetRequests(0), [], 'taken once');
  assert.deepEqual(p.borrowedMachines(), [2]);
  // d overflows too: the mixed pool is machine 2 now (600 + 600 <= 2000), an ordinary mixed-pool pick.
  assert.deepEqual(pair(route(p, 'd', 600, 10)), [2, undefined, 'mixed-pool', undefined]);
  // e: the pair's token machine is 3, the only one left in the token pool.
  assert.deepEqual(pair(route(p, 'e', 100, 10)), [0, 3, 'prompt-token-pair', 'serialized']);
  // c ends: d still runs there. d ends: machine 2 goes back to the token pool.
  p.requestFinished('c', 1, { promptTokens: 600, cachedTokens: 0, outputTokens: 10 });
  assert.deepEqual(p.fleetRequests(1), []);
  p.requestFailed('d', 2);
  assert.deepEqual(p.fleetRequests(2), [{ action: 'role', instance: 2, role: 'decode' }]);
  assert.deepEqual(p.borrowedMachines(), []);
  assert.deepEqual(pair(route(p, 'f', 100, 10)), [1, 2, 'prompt-token-pair', 'serialized']);
  // A pool's last machine is never lent: with token machine 3 drained, the pair (overflowing) it is.
  p.instanceDrained(3, 3);
  assert.deepEqual(pair(route(p, 'g', 1900, 10)), [0, 2, 'prompt-token-pair', 'layer-wise']);
  assert.deepEqual(p.fleetRequests(3), []);
});
