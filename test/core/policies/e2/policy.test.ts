import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { E2InstanceCost, E2Options } from '../../../../src/core/policies/e2/options.ts';
import { E2Policy } from '../../../../src/core/policies/e2/policy.ts';
import type { RouteDecision } from '../../../../src/core/types.ts';
import { concat, seq, simpleCostModel } from '../../../helpers/simple-cost-model.ts';

// Cost model: PT(n) = 0.001 n seconds, DT(k) = 0.01 k; before any output is seen DT uses 45 tokens = 0.45 s.
const OFF = { rebalance: false, prefixReplication: false, phaseMix: false } as const;
const finished = (promptTokens: number, cachedTokens = 0, outputTokens = 45) => ({
  promptTokens,
  cachedTokens,
  outputTokens,
});

function e2(
  instances: number,
  options: Partial<E2Options> = {},
  capacity = Number.POSITIVE_INFINITY,
): E2Policy {
  const p = new E2Policy({ costModel: simpleCostModel(), ...OFF, ...options });
  for (let i = 0; i < instances; i++) p.instanceAdded(i, { kvCapacityTokens: capacity }, 0);
  return p;
}

let nextId = 0;
function route(p: E2Policy, tokens: Uint32Array, now = 0): RouteDecision<E2InstanceCost> & { id: string } {
  const id = `r${nextId++}`;
  return { ...p.route({ id, tokens, arrival: now }, now), id };
}

function costOf(d: RouteDecision<E2InstanceCost>, instance: number) {
  const c = d.costs.find((x) => x.instance === instance);
  assert.ok(c, `cost of instance ${instance} reported`);
  return c;
}

const close = (actual: number, expected: number, what: string) =>
  assert.ok(Math.abs(actual - expected) < 1e-9, `${what}: ${actual} != ${expected}`);

test('explore on an idle cluster: equal costs P = PT(100) = 0.1, tie broken to the lower id', () => {
  const p = e2(2);
  const d = route(p, seq(100, 0));
  assert.equal(d.branch, 'explore');
  assert.equal(d.instance, 0);
  for (const i of [0, 1]) {
    close(costOf(d, i).total, 0.1, `cost ${i}`);
    close(costOf(d, i).load!, 0, `L ${i}`);
  }
});

test('exploit when cached tokens exceed missed: L = PT(100) + 1 x DT(45) = 0.55, P = PT(20)', () => {
  const p = e2(2);
  route(p, seq(100, 0));
  const d = route(p, concat(seq(80, 0), seq(20, 1000)));
  assert.equal(d.branch, 'exploit');
  assert.equal(d.instance, 0);
  assert.equal(d.matchedTokens, 80);
  assert.equal(d.costs.length, 1, 'only the instances caching the deepest matched node compete');
  const c = costOf(d, 0);
  close(c.load!, 0.1 + 0.45, 'L');
  close(c.prefill!, 0.02, 'P');
  close(c.eviction!, 0, 'M');
  close(c.total, 0.57, 'total');
});

test('missed equal to cached explores (the rule is strict), and picks the lowest L + M + P', () => {
  const p = e2(2);
  route(p, seq(100, 0));
  const d = route(p, concat(seq(50, 0), seq(50, 900)));
  assert.equal(d.branch, 'explore');
  // Instance 0: L = 0.1 + 0.45, P = PT(50) = 0.05 -> 0.6. Instance 1: L = 0, P = PT(100) = 0.1.
  close(costOf(d, 0).total, 0.6, 'cost 0');
  close(costOf(d, 1).total, 0.1, 'cost 1');
  assert.equal(d.instance, 1);
  assert.equal(d.matchedTokens, 0);
});

test('exploit tie-break: equal costs go to the instance with fewer requests in flight, then the lower id', () => {
  const build = () => {
    const p = e2(2);
    const x1 = route(p, concat(seq(10, 0), seq(50, 100))); // explore -> 0
    const x2 = route(p, concat(seq(10, 0), seq(50, 200))); // explore: 0.51 + 0.05 vs 0.06 -> 1
    assert.equal(x1.instance, 0);
    assert.equal(x2.instance, 1);
    // Now both cache seq(10, 0) and carry L = PT(60) + DT(45) = 0.51.
    return { p, x1, x2 };
  };
  {
    const { p } = build();
    const z = route(p, concat(seq(10, 0), seq(5, 900)));
    assert.equal(z.branch, 'exploit');
    close(costOf(z, 0).total, 0.515, 'cost 0');
    close(costOf(z, 1).total, 0.515, 'cost 1');
    assert.equal(z.instance, 0, 'equal in flight: lower id');
  }
  {
    const { p, x2 } = build();
    p.requestFinished(x2.id, 1, finished(60)); // output 45 keeps DT, so L stays 0.51
    const z = route(p, concat(seq(10, 0), seq(5, 900)), 1);
    close(costOf(z, 0).total, costOf(z, 1).total, 'still tied');
    assert.equal(z.instance, 1, 'fewer in flight wins the tie');
  }
});

test('eviction cost M prices LRU victims by PT(tokens) x (their window requests / the instance window requests)', () => {
  const p = e2(2, {}, 100);
  const a1 = route(p, concat(seq(50, 0), seq(10, 100)), 1); // explore -> 0
  const a2 = route(p, concat(seq(50, 0), seq(10, 200)), 2); // exploit -> 0
  assert.equal(a2.branch, 'exploit');
  p.requestFinished(a1.id, 3, finished(60));
  p.requestFinished(a2.id, 3, finished(60, 50));
  // Instance 0 caches 70 tokens; LRU oldest first: a1's leaf (10), a2's leaf (10), the shared 50.
  // L0 = PT(60) + PT(10) + 2 x 0.45 = 0.97.
  const small = route(p, seq(40, 5000), 4); // needs 70 + 40 - 100 = 10: a1's leaf, N = 1/2
  close(costOf(small, 0).eviction!, 0.01 * 0.5, 'M for 10 tokens');
  close(costOf(small, 0).load!, 0.97, 'L0');
  close(costOf(small, 0).total, 0.97 + 0.005 + 0.04, 'total 0');
  assert.equal(small.instance, 1);

  const q = e2(2, {}, 100);
  const b1 = route(q, concat(seq(50, 0), seq(10, 100)), 1);
  const b2 = route(q, concat(seq(50, 0), seq(10, 200)), 2);
  q.requestFinished(b1.id, 3, finished(60));
  q.requestFinished(b2.id, 3, finished(60, 50));
  // Needs 45: both leaves (10 each, N = 1/2) and 25 of the shared prefix (N = 2/2).
  const big = route(q, seq(75, 5000), 4);
  close(costOf(big, 0).eviction!, 0.005 + 0.005 + 0.025, 'M for 45 tokens');
});

test('prefill/decode balancing sends an explored request to a decode-heavy instance, within the load guard', () => {
  const scenario = (guard: number) => {
    const p = e2(2, { phaseMix: true, phaseMixRatio: 0.8, phaseMixLoadGuard: guard });
    route(p, seq(100, 0)); // -> 0
    for (let i = 0; i < 6; i++) route(p, concat(seq(100, 0), seq(5, 1000 + 10 * i))); // exploits -> 0
    // Instance 0's window: 600 cached of 730 prompt tokens = 0.82 > 0.8.
    assert.ok(p.decodeRatioOf(0) > 0.8);
    return route(p, seq(50, 7000));
  };
  const relaxed = scenario(1000);
  assert.equal(relaxed.branch, 'phase-mix');
  assert.equal(relaxed.instance, 0);
  const guarded = scenario(1.5); // instance 0 costs far more than 1.5 x instance 1
  assert.equal(guarded.branch, 'explore');
  assert.equal(guarded.instance, 1);
});

test('rebalancing redirects a key portion of the heavy instance to the light one, and only that one', () => {
  const p = new E2Policy({ costModel: simpleCostModel(), prefixReplication: false, phaseMix: false });
  p.instanceAdded(0, { kvCapacityTokens: Number.POSITIVE_INFINITY }, 0);
  const kp1 = seq(200, 10_000);
  const kp2 = seq(200, 20_000);
  for (let i = 0; i < 3; i++) route(p, concat(kp1, seq(10, 100 + 10 * i)), i);
  for (let i = 0; i < 3; i++) route(p, concat(kp2, seq(10, 500 + 10 * i)), 3 + i);
  p.instanceAdded(1, { kvCapacityTokens: Number.POSITIVE_INFINITY }, 6);
  p.tick(7);
  const moved = route(p, concat(kp1, seq(10, 900)), 8);
  assert.equal(moved.branch, 'rebalance');
  assert.equal(moved.instance, 1);
  const kept = route(p, concat(kp2, seq(10, 950)), 9);
  assert.equal(kept.branch, 'exploit');
  assert.equal(kept.instance, 0);
  // Without rebalancing the same stream stays on the heavy instance.
  const off = new E2Policy({ costModel: simpleCostModel(), ...OFF });
  off.instanceAdded(0, { kvCapacityTokens: Number.POSITIVE_INFINITY }, 0);
  for (let i = 0; i < 3; i++) route(off, concat(kp1, seq(10, 100 + 10 * i)), i);
  off.instanceAdded(1, { kvCapacityTokens: Number.POSITIVE_INFINITY }, 6);
  off.tick(7);
  assert.equal(route(off, concat(kp1, seq(10, 900)), 8).instance, 0);
});

test('prefix replication copies a prefix whose queueing time doubles across the window', () => {
  const p = e2(2, { prefixReplication: true, replicationMinSamples: 4, replicationMinQueueSeconds: 0.05 });
  const hot = seq(200, 10_000);
  let n = 0;
  const hit = (now: number, queue: number) => {
    const d = route(p, concat(hot, seq(10, 100 + 10 * n++)), now);
    p.requestStarted(d.id, now + queue);
    return d;
  };
  for (let t = 10; t < 50; t += 10) assert.equal(hit(t, 0.1).instance, 0); // first half of H: 0.1 s queues
  for (let t = 100; t < 140; t += 10) assert.equal(hit(t, 0.3).instance, 0); // second half: 0.3 s, tripled
  p.tick(150);
  const d = route(p, concat(hot, seq(10, 5000)), 151);
  assert.equal(d.branch, 'replica');
  assert.equal(d.instance, 1);
});

test('the window forgets: after H the load is zero and the tree keeps only what is cached', () => {
  const p = e2(2);
  const a = route(p, seq(100, 0), 0);
  const b = route(p, concat(seq(100, 0), seq(20, 500)), 1);
  p.requestFinished(a.id, 2, finished(100));
  p.requestFinished(b.id, 2, finished(120, 100));
  assert.ok(p.loadOf(0) > 0);
  p.tick(200);
  assert.equal(p.windowSize, 0);
  assert.equal(p.loadOf(0), 0);
  // The cached prompt and its branch stay (predicted cache), merged into one node now that nothing tells them apart.
  assert.equal(p.tree.nodeCount, 1);
  p.instanceRemoved(0, 201);
  assert.equal(p.tree.nodeCount, 0, 'a removed instance takes its cached prefixes with it');
  p.tree.checkInvariants();
});

test('the engine report of cached tokens corrects the window load', () => {
  const p = e2(1);
  route(p, seq(100, 0), 0);
  const b = route(p, concat(seq(100, 0), seq(20, 500)), 1);
  close(p.loadOf(0), 0.1 + 0.02 + 2 * 0.45, 'predicted: b missed 20');
  p.requestFinished(b.id, 2, finished(120, 0, 45)); // the engine had evicted it: all 120 recomputed
  close(p.loadOf(0), 0.1 + 0.12 + 2 * 0.45, 'reported: b missed 120');
});

test('observed output lengths replace the default in DT', () => {
  const p = e2(1);
  const a = route(p, seq(100, 0), 0);
  p.requestFinished(a.id, 1, finished(100, 0, 5));
  close(p.loadOf(0), 0.1 + 0.05, 'DT(5) = 0.05');
});

test('draining instances take nothing new; failures and finishes release every in-flight count', () => {
  const p = e2(2);
  const a = route(p, seq(100, 0), 0);
  assert.equal(a.instance, 0);
  p.instanceDrained(0, 1);
  const b = route(p, concat(seq(100, 0), seq(5, 900)), 2);
  assert.equal(b.instance, 1, 'the cache holder is draining');
  assert.equal(p.inflight(0), 1);
  p.requestFinished(a.id, 3, finished(100));
  p.requestFailed(b.id, 3);
  p.requestFailed(b.id, 3); // a second report is ignored
  assert.equal(p.inflight(0), 0);
  assert.equal(p.inflight(1), 0);
  close(p.loadOf(1), 0, 'a failed request leaves the load');
  p.tree.checkInvariants();
  p.instanceDrained(1, 4);
  assert.throws(() => route(p, seq(3, 0), 5), /no instance/);
});

test('reported evictions remove the prefix from the instance view', () => {
  const p = e2(2);
  const a = route(p, seq(100, 0), 0);
  p.requestFinished(a.id, 1, finished(100));
  p.instanceEvicted(0, seq(100, 0), 40, 2);
  const d = route(p, concat(seq(100, 0), seq(10, 900)), 3);
  // Only 40 tokens remain cached on 0: 40 < 70 missed, so the request explores.
  assert.equal(d.branch, 'explore');
  assert.equal(costOf(d, 0).matchedTokens, 40);
  p.tree.checkInvariants();
});

test('a stale eviction report does not un-cache a prefix a later request re-pinned (review 4.1)', () => {
  // The review's demonstration: A caches a 4000-token prefix on 0; the engine evicts it at 1.5
  // (an iteration start) and reports it at 1.6 (that iteration's end); B, routed at 1.55 through
  // the same prefix, exploits 0 and the engine will recompute and re-cache it. C must still see it.
  const p = e2(2);
  const prefix = seq(4000, 0);
  const a = route(p, concat(prefix, seq(10, 100_000)), 0);
  p.requestFinished(a.id, 1, finished(4010));
  const b = route(p, concat(prefix, seq(10, 200_000)), 1.55);
  assert.equal(b.branch, 'exploit');
  assert.equal(b.instance, 0);
  p.instanceEvicted(0, concat(prefix, seq(10, 100_000)), 0, 1.6, 1.5);
  p.tree.checkInvariants();
  p.requestFinished(b.id, 2, finished(4010, 0));
  const c = route(p, concat(prefix, seq(10, 300_000)), 3);
  assert.equal(c.branch, 'exploit');
  assert.equal(c.instance, 0);
  assert.equal(c.matchedTokens, 4000);
  p.tree.checkInvariants();
});

test('a stale report is clipped: the re-used branch stays cached, the branch nobody used since leaves', () => {
  const p = e2(2);
  const prefix = seq(400, 0);
  const x = concat(prefix, seq(300, 10_000));
  const y = concat(prefix, seq(300, 20_000));
  for (const [t, tokens] of [
    [0, x],
    [0.1, y],
  ] as const) {
    const d = route(p, tokens, t);
    p.requestFinished(d.id, t + 0.5, finished(700));
  }
  // Evicted at 1.5 (everything below the root); B went through x at 1.55 and finished by 1.9,
  // before the report at 2: its access, not a pin, tells that x is cached again.
  const b = route(p, x, 1.55);
  assert.equal(b.instance, 0);
  p.requestFinished(b.id, 1.9, finished(700, 700));
  p.instanceEvicted(0, y, 0, 2, 1.5);
  p.tree.checkInvariants();
  const again = route(p, concat(x, seq(5, 90_000)), 3);
  assert.equal(again.matchedTokens, 700, 'x was re-used after the eviction');
  const other = route(p, concat(y, seq(5, 90_000)), 3);
  assert.equal(costOf(other, 0).matchedTokens, 400, 'y only keeps the shared prefix');
  p.tree.checkInvariants();
});

test('a report at its own time still evicts what nobody used since', () => {
  const p = e2(2);
  const a = route(p, seq(100, 0), 0);
  p.requestFinished(a.id, 1, finished(100));
  const b = route(p, seq(100, 0), 1.2);
  p.requestFinished(b.id, 1.4, finished(100, 100));
  // Evicted at 1.5, after B's use: the report applies.
  p.instanceEvicted(0, seq(100, 0), 40, 1.6, 1.5);
  const d = route(p, concat(seq(100, 0), seq(10, 900)), 3);
  assert.equal(costOf(d, 0).matchedTokens, 40);
  p.tree.checkInvariants();
});

test('adjustments expire after one window even with rebalancing off (replication-only ablation)', () => {
  const p = e2(2, {
    windowSeconds: 10,
    prefixReplication: true,
    replicationMinSamples: 2,
    replicationMinQueueSeconds: 0.01,
  });
  const hot = seq(200, 10_000);
  let n = 0;
  const hit = (now: number, queue: number) => {
    const d = route(p, concat(hot, seq(10, 100 + 10 * n++)), now);
    p.requestStarted(d.id, now + queue);
    p.requestFinished(d.id, now + queue, finished(210, 200));
    return d;
  };
  for (const t of [1, 2]) hit(t, 0.02);
  for (const t of [6, 7]) hit(t, 0.2);
  p.tick(8);
  assert.equal(route(p, concat(hot, seq(10, 5000)), 8.5).branch, 'replica');
  p.tick(100); // the window turned over: the replica and its redirects are gone
  for (let k = 0; k < 4; k++) {
    // Among these children are the ones the subtree split moved to the replica. Instance 1 now
    // caches the key portion `hot` too, so it competes by cost as a plain exploit candidate.
    const later = route(p, concat(hot, seq(10, 100 + 10 * k)), 100.5 + k);
    assert.equal(later.branch, 'exploit', `child ${k}`);
  }
});

test('a split keeps a redirect on its own prefix instead of widening it to other branches', () => {
  const p = new E2Policy({ costModel: simpleCostModel(), prefixReplication: false, phaseMix: false });
  p.instanceAdded(0, { kvCapacityTokens: Number.POSITIVE_INFINITY }, 0);
  const system = seq(500, 0);
  const doc = seq(600, 10_000);
  const other = seq(600, 20_000);
  for (let i = 0; i < 3; i++) route(p, concat(system, doc, seq(10, 100 + 10 * i)), i);
  for (let i = 0; i < 3; i++) route(p, concat(system, other, seq(10, 500 + 10 * i)), 3 + i);
  p.instanceAdded(1, { kvCapacityTokens: Number.POSITIVE_INFINITY }, 6);
  p.tick(7);
  // The cheaper key portion moves: `other` (first prefill 610 tokens against the doc's 1110).
  assert.equal(route(p, concat(system, other, seq(10, 900)), 8).branch, 'rebalance');
  // A request sharing part of the moved document splits its node...
  route(p, concat(system, seq(300, 20_000), seq(10, 70_000)), 9);
  // ...the redirect still covers the moved document, and requests on the other one still exploit 0.
  assert.equal(route(p, concat(system, other, seq(10, 910)), 10).branch, 'rebalance');
  const d = route(p, concat(system, doc, seq(10, 950)), 11);
  assert.equal(d.branch, 'exploit');
  assert.equal(d.instance, 0);
});

test('failed requests leave the eviction weights: N_j never exceeds 1', () => {
  const p = e2(1, {}, 250);
  for (let i = 0; i < 3; i++) {
    const d = route(p, seq(100, 0), i);
    p.requestFailed(d.id, i + 0.5);
  }
  route(p, seq(100, 5000), 4); // one live request: 200 of 250 tokens used
  const probe = route(p, seq(100, 9000), 5); // needs 50 more: 50 tokens of the failed prompt's node go
  const c = costOf(probe, 0);
  assert.ok(c.eviction! <= 0.05 + 1e-12, `M = ${c.eviction} must not exceed PT(50) x 1`);
});

test('a clock that steps back neither throws nor leaks a pin', () => {
  const p = e2(1);
  const a = route(p, seq(10, 0), 10);
  const b = route(p, seq(10, 100), 9.999);
  p.requestFinished(a.id, 11, finished(10));
  p.requestFinished(b.id, 11, finished(10));
  p.tick(500);
  p.instanceRemoved(0, 501);
  assert.equal(p.tree.nodeCount, 0);
});

test('an instance re-added under the same id starts with no load', () => {
  const p = e2(2);
  for (let i = 0; i < 4; i++) route(p, seq(50, 1000 * i), i);
  assert.ok(p.loadOf(1) > 0);
  p.instanceRemoved(1, 5);
  p.instanceAdded(1, { kvCapacityTokens: Number.POSITIVE_INFINITY }, 6);
  assert.equal(p.loadOf(1), 0);
  p.tree.checkInvariants();
});

test('exclusive prefixes (llama.cpp slots): a cached prefix busy with a running request is not exploited, so a concurrent twin goes elsewhere', () => {
  for (const exclusivePrefixes of [false, true]) {
    const p = new E2Policy({ costModel: simpleCostModel(), ...OFF });
    for (let i = 0; i < 2; i++) p.instanceAdded(i, { kvCapacityTokens: 10_000, exclusivePrefixes }, 0);
    const first = route(p, concat(seq(100, 0), seq(5, 500)));
    p.requestFinished(first.id, 1, finished(105));
    const running = route(p, concat(seq(100, 0), seq(5, 600)), 2);
    assert.equal(running.branch, 'exploit');
    assert.equal(running.instance, first.instance);
    const twin = route(p, concat(seq(100, 0), seq(5, 700)), 2);
    if (exclusivePrefixes) {
      assert.equal(twin.branch, 'explore', 'the only copy of the prefix is busy');
      assert.notEqual(twin.instance, first.instance);
      assert.equal(twin.matchedTokens, 0);
    } else {
      assert.equal(twin.branch, 'exploit', 'paged engines share the cached prefix');
      assert.equal(twin.instance, first.instance);
    }
    // Once the running request is done, the prefix is free to serve again.
    p.requestFinished(running.id, 3, finished(105, 100));
    p.requestFinished(twin.id, 3, finished(105));
    const later = route(p, concat(seq(100, 0), seq(5, 800)), 4);
    assert.equal(later.branch, 'exploit');
  }
});

test('issue 11: exploit candidates are the key portion holders, each priced with its own miss', () => {
  const A = seq(100, 0);
  const build = (exploitCandidates: 'key-portion' | 'deepest') => {
    const p = e2(2, { exploitCandidates });
    assert.equal(route(p, concat(A, seq(10, 1000))).instance, 0); // explore -> 0
    // cached 100 = missed 100: explore; 0 costs 0.56 + PT(100), 1 costs PT(200) -> 1, which now caches A.
    assert.equal(route(p, concat(A, seq(100, 3000))).instance, 1);
    // A + B exploits A (cached on both): L0 = 0.56 + PT(20) < L1 = 0.65 + PT(20) -> 0, which caches A + B.
    assert.equal(route(p, concat(A, seq(20, 4000))).instance, 0);
    return route(p, concat(A, seq(20, 4000), seq(5, 9000)));
  };
  // A (100 tokens, nothing before it) is the key portion; B (20 tokens after 100) is not.
  const d = build('key-portion');
  assert.equal(d.branch, 'exploit');
  assert.equal(d.costs.length, 2, 'both instances caching the key portion compete');
  // Instance 0: L = 0.11 + 0.02 + 2 x 0.45 = 1.03, P = PT(5). Instance 1: L = 0.2 + 0.45, P = PT(25).
  close(costOf(d, 0).total, 1.035, 'cost 0');
  close(costOf(d, 1).total, 0.675, 'cost 1');
  assert.equal(d.instance, 1);
  const old = build('deepest');
  assert.equal(old.costs.length, 1, 'only the deepest node (A + B) holder');
  assert.equal(old.instance, 0);
});

test('issue 11: by default exploit considers only the holders of the longest matched prefix', () => {
  // The paper's introduction ("we send the request to the GPU that caches the longest-matched
  // prefix") and the authors' code (the allocation of the nearest allocated ancestor) both pick
  // among the deepest matched node's holders; the key-portion reading made every instance holding
  // Programming's 2,400-token demonstration a candidate and spread each problem's samples.
  const A = seq(100, 0);
  const p = e2(2);
  assert.equal(p.options.exploitCandidates, 'deepest');
  assert.equal(route(p, concat(A, seq(10, 1000))).instance, 0);
  assert.equal(route(p, concat(A, seq(100, 3000))).instance, 1); // explore: A now on both
  assert.equal(route(p, concat(A, seq(20, 4000))).instance, 0); // A + B on 0 only
  const d = route(p, concat(A, seq(20, 4000), seq(5, 9000)));
  assert.equal(d.branch, 'exploit');
  assert.deepEqual(
    d.costs.map((c) => c.instance),
    [0],
    'only the holder of A + B competes, although 1 is cheaper (0.675 s against 1.035 s)',
  );
  assert.equal(d.instance, 0);
  assert.equal(d.matchedTokens, 120);
});

test('issue 11: phase-mix balancing fires on a relative imbalance, not on a high ratio every instance shares', () => {
  const scenario = (phaseMixTest: 'relative' | 'absolute', onOne: number) => {
    const p = e2(2, { phaseMix: true, phaseMixTest, phaseMixLoadGuard: Number.POSITIVE_INFINITY });
    assert.equal(route(p, seq(100, 0)).instance, 0);
    assert.equal(route(p, seq(100, 5000)).instance, 1);
    for (let i = 0; i < 6; i++) route(p, concat(seq(100, 0), seq(5, 1000 + 10 * i))); // exploits -> 0
    for (let i = 0; i < onOne; i++) route(p, concat(seq(100, 5000), seq(5, 2000 + 10 * i))); // -> 1
    const ratios = [p.decodeRatioOf(0), p.decodeRatioOf(1)] as const;
    return { ratios, d: route(p, seq(50, 7000)) };
  };
  // Both instances above ImbalR = 0.8 (the Programming pattern): Algorithm 1's absolute test sends the
  // explored request to the more decode-heavy one although the two are balanced.
  {
    const { ratios, d } = scenario('absolute', 7);
    assert.ok(ratios[0] > 0.8 && ratios[1] > ratios[0]); // 0.82 and 0.83
    assert.equal(d.branch, 'phase-mix');
    assert.equal(d.instance, 1);
  }
  {
    const { d } = scenario('relative', 7);
    assert.equal(d.branch, 'explore', 'relatively balanced: load-cost comparison');
    assert.equal(d.instance, 0);
  }
  // One decode-heavy instance against a prefill-only one: the relative test fires too.
  {
    const p = e2(2, { phaseMix: true, phaseMixTest: 'relative' });
    route(p, seq(100, 0));
    for (let i = 0; i < 6; i++) route(p, concat(seq(100, 0), seq(5, 1000 + 10 * i)));
    assert.equal(p.decodeHeavy([0, 1]), 0);
    const d = route(p, seq(50, 7000));
    assert.equal(d.branch, 'phase-mix');
    assert.equal(d.instance, 0);
  }
});

test("decodeLoad: the paper charges DT to every request in H; the authors' code (inflight) only while in flight", () => {
  const scenario = (decodeLoad: 'window' | 'inflight') => {
    const p = e2(2, { decodeLoad });
    const a = route(p, seq(100, 0)); // explore -> 0
    // In flight, both count its decode: L0 = PT(100) + DT(45) = 0.1 + 0.45.
    close(p.loadOf(0), 0.55, `${decodeLoad}: L0 in flight`);
    assert.equal(route(p, seq(50, 2000)).instance, 1, 'L1 = 0 < 0.55'); // L1 = 0.05 + 0.45, in flight
    p.requestFinished(a.id, 1, finished(100));
    const load = p.loadOf(0);
    return { load, d: route(p, seq(100, 5000), 2) };
  };
  const paper = scenario('window');
  close(paper.load, 0.55, 'window: a finished request still weighs its decode for the rest of H');
  close(costOf(paper.d, 0).total, 0.65, 'L0 + P');
  close(costOf(paper.d, 1).total, 0.6, 'L1 + P');
  assert.equal(paper.d.instance, 1);
  const authors = scenario('inflight');
  close(authors.load, 0.1, 'inflight: only the prefill part stays in H');
  close(costOf(authors.d, 0).total, 0.2, 'L0 + P');
  close(costOf(authors.d, 1).total, 0.6, 'L1 + P: its request is still in flight');
  assert.equal(authors.d.instance, 0, 'the instance whose request finished is the lighter one now');
  assert.throws(() => e2(1, { decodeLoad: 'x' as 'window' }), /decodeLoad/);
});
