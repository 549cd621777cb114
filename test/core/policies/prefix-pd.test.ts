import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { costModelPreset } from '../../../src/core/cost-model/presets.ts';
import { buildFleet } from '../../../src/core/fleet/fleet.ts';
import { parseFleetConfig } from '../../../src/core/fleet/spec.ts';
import { PrefixAwarePdPolicy, type PrefixPdOptions } from '../../../src/core/policies/disagg/prefix-aware.ts';
import { LeastLoadPolicy } from '../../../src/core/policies/least-load.ts';
import { createGlobalPolicy } from '../../../src/core/policies/registry.ts';
import type { GlobalPolicy, Role } from '../../../src/core/types.ts';
import { fleetRun, runSimulation } from '../../../src/sim/run.ts';
import { createWorkload } from '../../../src/workloads/registry.ts';
import { RecordingPolicy } from '../../helpers/recording-policy.ts';
import { concat, seq, simpleCostModel } from '../../helpers/simple-cost-model.ts';
import { signal } from './helpers.ts';

/** prefix-pd over a least-load inner policy (recorded) on a fleet of the given roles. */
const fleet = (roles: readonly Role[], options: PrefixPdOptions = {}) => {
  const inner = new RecordingPolicy(new LeastLoadPolicy());
  const policy = new PrefixAwarePdPolicy({ ...options, costModel: simpleCostModel(), inner });
  for (const [i, role] of roles.entries()) policy.instanceAdded(i, { kvCapacityTokens: 100_000, role }, 0);
  return { policy, inner };
};

const done = { promptTokens: 1, cachedTokens: 0, outputTokens: 1 };

/** A disaggregated request through its prefill leg and decode choice; returns its decode instance. */
const toDecode = (p: PrefixAwarePdPolicy, id: string, tokens: Uint32Array, now = 0, outputLenHint = 100) => {
  const d = p.route({ id, tokens, arrival: now, outputLenHint }, now);
  assert.equal(d.decode, 'at-kv-ready');
  p.requestStarted(id, now);
  p.requestFirstToken(id, now);
  p.kvReady(id, d.instance, tokens, now);
  const decode = p.routeDecode(id, d.instance, tokens.length, now);
  p.kvArrived(id, decode, tokens, now);
  return decode;
};

test('prefix-pd decider: a short uncached prefill runs colocated on a mixed instance, a long one is disaggregated', () => {
  // 0 prefill, 1 decode, 2 mixed; 1 ms per prefill token: the 0.1 s default is 100 uncached tokens.
  const { policy } = fleet(['prefill', 'decode', 'mixed']);
  const short = policy.route({ id: 'a', tokens: seq(100, 1), arrival: 0 }, 0);
  assert.deepEqual([short.instance, short.decode, short.branch], [2, undefined, 'colocated']);
  const long = policy.route({ id: 'b', tokens: seq(101, 1000), arrival: 0 }, 0);
  assert.deepEqual([long.instance, long.decode, long.branch], [0, 'at-kv-ready', 'disaggregated']);
  // 300 tokens whose first 100 (a's prompt) the mixed instance caches: 200 uncached there, disaggregated;
  // 150 tokens over the same 100: 50 uncached, colocated.
  const c = policy.route({ id: 'c', tokens: concat(seq(100, 1), seq(200, 5000)), arrival: 0 }, 0);
  assert.equal(c.branch, 'disaggregated');
  const d = policy.route({ id: 'd', tokens: concat(seq(100, 1), seq(50, 9000)), arrival: 0 }, 0);
  assert.deepEqual([d.instance, d.decode, d.branch], [2, undefined, 'colocated']);
  // The threshold is an option: at 0.5 s the 300-token prompt runs colocated too.
  const lax = fleet(['prefill', 'decode', 'mixed'], { colocatedPrefillSeconds: 0.5 }).policy;
  assert.equal(lax.route({ id: 'e', tokens: seq(300, 1), arrival: 0 }, 0).branch, 'colocated');
});

test('prefix-pd decider: a prefix cached on a prefill instance counts; a full prefill queue overflows to the mixed instances', () => {
  const { policy } = fleet(['prefill', 'decode', 'mixed'], { prefillQueueTokens: 250 });
  // a: 200 uncached tokens (0.2 s), disaggregated; the prefill queue of 0 holds 200 tokens.
  assert.equal(policy.route({ id: 'a', tokens: seq(200, 1), arrival: 0 }, 0).branch, 'disaggregated');
  assert.equal(policy.promptQueueTokens(0), 200);
  // b: a's 200 tokens (cached on the prefill instance) + 50: 50 uncached, colocated on the mixed one.
  const b = policy.route({ id: 'b', tokens: concat(seq(200, 1), seq(50, 900)), arrival: 0 }, 0);
  assert.deepEqual([b.instance, b.decode, b.branch], [2, undefined, 'colocated']);
  // c: 200 new tokens, long, but 200 queued + 200 > 250: it overflows to the mixed instance.
  const c = policy.route({ id: 'c', tokens: seq(200, 5000), arrival: 0 }, 0);
  assert.deepEqual([c.instance, c.decode, c.branch], [2, undefined, 'prefill-overflow']);
  // a's prefill ends: its tokens leave the queue, and the next long prompt is disaggregated again.
  policy.requestFirstToken('a', 1);
  assert.equal(policy.promptQueueTokens(0), 0);
  assert.equal(policy.route({ id: 'd', tokens: seq(200, 8000), arrival: 1 }, 1).branch, 'disaggregated');
});

test('prefix-pd decider: without mixed instances everything is disaggregated, without prefill ones everything colocated', () => {
  const pd = fleet(['prefill', 'decode']).policy;
  assert.equal(pd.route({ id: 'a', tokens: seq(10, 1), arrival: 0 }, 0).branch, 'disaggregated');
  const mixedOnly = fleet(['mixed', 'mixed']).policy;
  const d = mixedOnly.route({ id: 'a', tokens: seq(1000, 1), arrival: 0 }, 0);
  assert.deepEqual([d.decode, d.branch], [undefined, 'colocated']);
});

test('prefix-pd decode choice: with equal loads the instance that caches the prefix; with a small saving the less loaded one', () => {
  // 0 prefill, 1 and 2 decode. kvBytesPerToken 1 over 10 kB/s: 0.1 ms per uncached KV token.
  const { policy } = fleet(['prefill', 'decode', 'decode'], { linkBandwidth: 10_000 });
  // a: both idle and uncached: the tie goes to the first decode instance.
  assert.equal(toDecode(policy, 'a', seq(200, 1)), 1);
  policy.requestFinished('a', 1, done);
  // b shares a's 200 tokens, which 1 caches. Equal loads (none), decode 100 x 1 ms on both; transfer
  // 100 tokens = 10 ms on 1, 300 tokens = 30 ms on 2. Rotation would try 2 first: the cache wins.
  assert.equal(toDecode(policy, 'b', concat(seq(200, 1), seq(100, 5000)), 1), 1);
  assert.deepEqual(
    policy.lastDecodeCosts.map((c) => [c.instance, c.matchedTokens, +c.transfer.toFixed(4)]),
    [
      [2, 0, 0.03],
      [1, 200, 0.01],
    ],
  );
  // c: b still decodes on 1, so there the batch would be 2 requests, 100 x 2 ms = 0.2 s (+ 10 ms
  // transfer); on 2 it is alone, 100 x 1 ms = 0.1 s (+ 30 ms): the 20 ms saved by the cache does not
  // pay for the load.
  assert.equal(toDecode(policy, 'c', concat(seq(200, 1), seq(100, 6000)), 1), 2);
  const costs = Object.fromEntries(policy.lastDecodeCosts.map((c) => [c.instance, +c.total.toFixed(4)]));
  assert.deepEqual(costs, { 1: 0.21, 2: 0.13 });
});

test('prefix-pd: the inner policy sees only the prefill-capable instances and the feedback of its legs', () => {
  const { policy, inner } = fleet(['prefill', 'decode', 'mixed', 'decode']);
  assert.deepEqual(policy.innerInstances(), [0, 2]);
  assert.deepEqual(
    inner.calls.flatMap((c) => (c.method === 'instanceAdded' ? [c.instance] : [])),
    [0, 2],
  );
  // Load signals and evictions of decode instances stay outside; ticks pass.
  for (let i = 0; i < 4; i++) policy.loadSignal(i, signal(), 1);
  policy.instanceEvicted(1, seq(5, 1), 0, 1);
  policy.instanceEvicted(2, seq(5, 1), 0, 1);
  policy.tick(1);
  assert.deepEqual(
    inner.calls
      .filter((c) => c.method === 'loadSignal' || c.method === 'instanceEvicted')
      .map((c) => c.instance),
    [0, 2, 2],
  );
  assert.equal(inner.calls.filter((c) => c.method === 'tick').length, 1);
  // A disaggregated request: the inner policy gets its route (among 0 only), start and first token, and
  // its finish (one output token) when the KV left the prefill instance; not the decode's finish.
  const decode = toDecode(policy, 'a', seq(500, 1), 2);
  assert.equal(decode, 1);
  policy.requestFinished('a', 3, { promptTokens: 500, cachedTokens: 0, outputTokens: 100 });
  assert.deepEqual(
    inner.of('a').map((c) => c.method),
    ['route', 'requestStarted', 'requestFirstToken', 'requestFinished'],
  );
  const finish = inner.of('a').at(-1)!;
  assert.ok(finish.method === 'requestFinished' && finish.now === 2 && finish.counts.outputTokens === 1);
  // A colocated request: its whole journey, with the engine's counts.
  const d = policy.route({ id: 'b', tokens: seq(10, 1), arrival: 3 }, 3);
  assert.equal(d.instance, 2);
  policy.requestFinished('b', 4, { promptTokens: 10, cachedTokens: 0, outputTokens: 7 });
  const bFinish = inner.of('b').at(-1)!;
  assert.ok(bFinish.method === 'requestFinished' && bFinish.counts.outputTokens === 7);
  // A failure before the KV moved reaches the inner policy as a failure, once.
  policy.route({ id: 'c', tokens: seq(500, 1), arrival: 4 }, 4);
  policy.requestFailed('c', 5);
  policy.requestFailed('c', 5);
  assert.deepEqual(
    inner.of('c').map((c) => c.method),
    ['route', 'requestFailed'],
  );
  for (const i of [0, 1, 2, 3]) assert.equal(policy.inflight(i), 0);
});

test('prefix-pd on a fleet without roles is its inner policy', () => {
  const costModel = simpleCostModel(4000);
  const outer = createGlobalPolicy('prefix-pd', { costModel });
  const e2 = createGlobalPolicy('e2', { costModel });
  for (const p of [outer, e2]) for (let i = 0; i < 3; i++) p.instanceAdded(i, { kvCapacityTokens: 4000 }, 0);
  for (let k = 0; k < 40; k++) {
    const tokens = concat(seq(300, 1 + (k % 4) * 1000), seq(20 + k, 10_000 + k * 100));
    const now = k * 0.2;
    const a = outer.route({ id: `r${k}`, tokens, arrival: now }, now);
    const b = e2.route({ id: `r${k}`, tokens, arrival: now }, now);
    assert.deepEqual([a.instance, a.decode, a.matchedTokens], [b.instance, undefined, b.matchedTokens]);
    if (k % 3 === 0) {
      const counts = { promptTokens: tokens.length, cachedTokens: a.matchedTokens, outputTokens: 5 };
      for (const p of [outer, e2]) p.requestFinished(`r${k}`, now, counts);
    }
  }
});

test('prefix-pd rejects a disaggregated or unknown prefillPolicy with one line', () => {
  const costModel = simpleCostModel();
  assert.throws(
    () => createGlobalPolicy('prefix-pd', { costModel }, { prefillPolicy: 'distserve' }),
    /prefillPolicy' must be a colocated policy/,
  );
  assert.throws(
    () => createGlobalPolicy('prefix-pd', { costModel }, { prefillPolicy: 'nope' }),
    /prefillPolicy' must be a colocated policy/,
  );
});

// The contract test (contract.test.ts) runs prefix-pd on prefill and decode instances only, where it
// disaggregates everything; here a mixed instance adds colocated requests to the same property.
test('prefix-pd with a mixed instance: counts each request where it is and releases it exactly once', () => {
  type Op = { kind: 'route'; len: number } | { kind: 'kv' | 'finish' | 'fail'; pick: number };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ kind: fc.constant('route' as const), len: fc.integer({ min: 1, max: 300 }) }),
    fc.record({ kind: fc.constantFrom('kv' as const, 'finish' as const, 'fail' as const), pick: fc.nat() }),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
      const inner: GlobalPolicy = createGlobalPolicy('e2', { costModel: simpleCostModel(2000) });
      const policy = new PrefixAwarePdPolicy({ costModel: simpleCostModel(2000), inner });
      const roles: Role[] = ['prefill', 'decode', 'mixed'];
      for (const [i, role] of roles.entries()) policy.instanceAdded(i, { kvCapacityTokens: 2000, role }, 0);
      const live: { id: string; at: number; tokens: Uint32Array; waiting: boolean }[] = [];
      let n = 0;
      let now = 0;
      for (const o of ops) {
        now += 0.1;
        if (o.kind === 'route') {
          const id = `r${n++}`;
          const tokens = concat(seq(Math.min(o.len, 150), 1), seq(o.len, 1000 * n));
          const d = policy.route({ id, tokens, arrival: now }, now);
          assert.equal(d.decode === undefined, d.branch === 'colocated');
          assert.equal(d.instance, d.decode === undefined ? 2 : 0);
          policy.requestStarted(id, now);
          policy.requestFirstToken(id, now);
          live.push({ id, at: d.instance, tokens, waiting: d.decode !== undefined });
        } else if (o.kind === 'kv') {
          const waiting = live.filter((r) => r.waiting);
          if (waiting.length === 0) continue;
          const r = waiting[o.pick % waiting.length]!;
          policy.kvReady(r.id, r.at, r.tokens, now);
          r.at = policy.routeDecode(r.id, r.at, r.tokens.length, now);
          assert.equal(r.at, 1);
          r.waiting = false;
          policy.kvArrived(r.id, r.at, r.tokens, now);
        } else {
          if (live.length === 0) continue;
          const [r] = live.splice(o.pick % live.length, 1);
          if (o.kind === 'finish') policy.requestFinished(r!.id, now, done);
          else policy.requestFailed(r!.id, now);
          policy.requestFinished(r!.id, now, done);
        }
        for (let i = 0; i < 3; i++)
          assert.equal(policy.inflight(i), live.filter((r) => r.at === i).length, `in flight on ${i}`);
        policy.tree.checkInvariants();
      }
      for (const r of live.splice(0)) policy.requestFailed(r.id, now);
      for (let i = 0; i < 3; i++) assert.equal(policy.inflight(i), 0);
      // The inner policy released every leg it was given too.
      const innerInflight = (inner as unknown as { inflight(i: number): number }).inflight.bind(inner);
      for (const i of [0, 2]) assert.equal(innerInflight(i), 0);
    }),
    { numRuns: 60 },
  );
});

test('prefix-pd in the simulator on 1P1D1M: both kinds of request finish, and kvMoved counts only the uncached KV', () => {
  const costModel = costModelPreset('mistral-7b-a6000');
  const fleet = buildFleet(
    parseFleetConfig({
      instances: (['prefill', 'decode', 'mixed'] as const).map((role) => ({
        role,
        model: 'mistral-7b-a6000',
      })),
      nodeLink: 'pcie-host',
    }),
  );
  const { report, result } = runSimulation({
    policy: 'prefix-pd',
    workload: 'toolbench',
    rps: 6,
    costModel,
    seed: 1,
    ...fleetRun(fleet),
    requests: () => createWorkload('toolbench', { requests: 200, rps: 6, seed: 1 }),
  });
  assert.equal(report.completed, 200);
  assert.ok((report.branches.colocated ?? 0) > 0 && (report.branches.disaggregated ?? 0) > 0);
  const moved = result.records.filter((r) => r.movedKvTokens >= 0);
  assert.equal(moved.length, report.kvMoved!.transfers);
  for (const r of moved) {
    assert.ok(r.movedKvTokens <= r.promptTokens);
    assert.equal(r.movedKvBytes, r.movedKvTokens * costModel.kvBytesPerToken);
  }
  for (const r of result.records.filter((x) => x.decodeInstance < 0)) assert.equal(r.movedKvTokens, -1);
  // Shared tool prompts: some of the KV was already on the decode instance.
  assert.ok(report.kvMoved!.tokens < report.kvMoved!.kvTokens);
});
