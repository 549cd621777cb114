import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { BatchShape, CostModel } from '../../../../src/core/cost-model/types.ts';
import type { E2PlusInstanceCost, E2PlusOptions } from '../../../../src/core/policies/e2-plus/options.ts';
import { E2PlusPolicy } from '../../../../src/core/policies/e2-plus/policy.ts';
import type { RouteDecision } from '../../../../src/core/types.ts';
import { concat, seq, simpleCostModel } from '../../../helpers/simple-cost-model.ts';

// Cost model: PT(n) = 0.001 n s; one decode step of a batch of B = 0.001 B s; output before any
// finish: 45 tokens. So r's decode at batch B costs 45 x 0.001 (B + 1) and slows the B others by 45 x 0.001 x B.
// The recent prefill share's stretch and latencyPower are off unless a test turns them on (their own
// tests below), so that the costs stay sums by hand; the context-free step makes instanceContexts moot here.
function plus(instances: number, options: Partial<E2PlusOptions> = {}): E2PlusPolicy {
  const p = new E2PlusPolicy({
    costModel: simpleCostModel(),
    evictionCost: false,
    prefillShare: false,
    latencyPower: 1,
    ...options,
  });
  for (let i = 0; i < instances; i++) p.instanceAdded(i, { kvCapacityTokens: Number.POSITIVE_INFINITY }, 0);
  return p;
}

/** A second GPU model twice as fast as `slow`: half its prefill and half its decode step. */
function twiceAsFast(slow: CostModel): CostModel {
  return {
    ...slow,
    name: 'fast',
    iterationTime: (b: BatchShape) => 0.0005 * b.newTokens,
    prefillTime: (n: number) => (n > 0 ? 0.0005 * n : 0),
  };
}

let nextId = 0;
function route(
  p: E2PlusPolicy,
  tokens: Uint32Array,
  now = 0,
): RouteDecision<E2PlusInstanceCost> & { id: string } {
  const id = `p${nextId++}`;
  return { ...p.route({ id, tokens, arrival: now }, now), id };
}

const close = (actual: number, expected: number, what: string) =>
  assert.ok(Math.abs(actual - expected) < 1e-9, `${what}: ${actual} != ${expected}`);
const cost = (d: RouteDecision<E2PlusInstanceCost>, i: number) => d.costs.find((c) => c.instance === i)!;

test('idle cluster: every instance costs P + out x step(1), tie to the lower id', () => {
  const p = plus(2);
  const d = route(p, seq(100, 0));
  close(cost(d, 0).total, 0.1 + 0.045, 'cost 0');
  close(cost(d, 1).total, 0.145, 'cost 1');
  assert.equal(d.instance, 0);
  assert.equal(d.branch, 'explore');
});

test('every instance is priced with its own miss: the holder wins while its extra batch costs less than the prefix', () => {
  const p = plus(2);
  route(p, seq(100, 0)); // -> 0, in flight, 0.1 s of prefill queued
  close(p.queuedPrefillOf(0), 0.1, 'queued');
  const d = route(p, concat(seq(100, 0), seq(20, 500)));
  // 0: nothing queued ahead under lpm (the queued request has fewer cached tokens), P = 0.02,
  //    decode 45 x 0.002 + 1 x 45 x 0.001 = 0.135. 1: P = 0.12, decode 0.045.
  close(cost(d, 0).queued, 0, 'lpm: nothing ahead');
  close(cost(d, 0).total, 0.155, 'cost 0');
  close(cost(d, 1).total, 0.165, 'cost 1');
  assert.equal(d.instance, 0);
  assert.equal(d.branch, 'exploit');
});

test("lpm: a queue longer than SGLang's 128 is served unsorted, so all of it is ahead", () => {
  // The engine's waiting queue once r joins: the queued flights not yet admitted, and r.
  for (const [queuedCount, admitted, ahead] of [
    [127, 0, 0],
    [128, 0, 128 * 0.01],
    [129, 2, 0],
    [130, 2, 130 * 0.01],
  ] as const) {
    const p = plus(1);
    const ids: string[] = [];
    for (let k = 0; k < queuedCount; k++) ids.push(route(p, seq(10, 1000 + k * 10)).id);
    // Admitted prefills are ahead in either order (startedAhead); started at 0, all of each is left.
    for (const id of ids.slice(0, admitted)) p.requestStarted(id, 0);
    const sortedAhead = admitted * 0.01;
    // r caches the first prompt's 10 tokens, which every queued request lacks (0 cached at routing):
    // sorted, none of them goes before it; unsorted, all 10-token prefills (0.01 s each) do.
    const d = route(p, concat(seq(10, 1000), seq(10, 90_000)));
    close(cost(d, 0).queued, ahead || sortedAhead, `${queuedCount} queued, ${admitted} admitted`);
  }
});

test('fcfs queue order counts the whole queued prefill ahead, and the cheaper miss elsewhere wins', () => {
  const p = plus(2, { queueOrder: 'fcfs', decodeEnds: false, laterArrivals: false });
  route(p, seq(100, 0));
  const d = route(p, concat(seq(100, 0), seq(20, 500)));
  // The queued request is ahead: 0.1 s of queue, and r's P = 0.02 delays it once it decodes.
  close(cost(d, 0).total, 0.1 + 0.155 + 0.02, 'cost 0');
  assert.equal(d.instance, 1);
  assert.equal(d.branch, 'explore');
});

test('after its first token a request no longer queues: it decodes, and a new prefill there delays it', () => {
  const p = plus(2);
  const a = route(p, seq(100, 0));
  p.requestFirstToken(a.id, 1);
  close(p.queuedPrefillOf(0), 0, 'no prefill queued');
  const d = route(p, seq(200, 9000), 1);
  // 0: P = 0.2, delays its 1 decoding request by 0.2; decode 0.135. 1: P = 0.2, decode 0.045.
  close(cost(d, 0).interference, 0.2, 'interference');
  assert.equal(d.instance, 1);
  p.requestFinished(a.id, 2, { promptTokens: 100, cachedTokens: 0, outputTokens: 5 });
  // The window's output average (5 tokens) now prices decode.
  const e = route(p, seq(10, 20_000), 2);
  close(cost(e, 0).decode, 5 * 0.001, 'decode at the observed output length');
});

test('a burst on one prefix spreads once the holder costs more than recomputing the prefix elsewhere', () => {
  const p = plus(2);
  const prefix = seq(300, 0);
  const placed: number[] = [];
  for (let k = 0; k < 12; k++) placed.push(route(p, concat(prefix, seq(5, 1000 + 10 * k))).instance);
  assert.equal(placed[0], 0);
  assert.equal(placed[1], 0, 'the second sample exploits');
  assert.ok(placed.includes(1), `the burst spills over: ${placed}`);
  const ones = placed.filter((i) => i === 1).length;
  assert.ok(ones < placed.length / 2 + 2, 'but the holder keeps its share');
});

test('the prefill delays the requests queued ahead of it as it delays those decoding (they decode by then)', () => {
  for (const aheadDecoding of [true, false]) {
    const p = plus(2, { aheadDecoding, decodeEnds: false, laterArrivals: false });
    route(p, seq(100, 0)); // -> 0, queued, nothing cached
    // On 0 the queued request is ahead (as many cached tokens: none): r's P = 0.05 delays it.
    const r = route(p, seq(50, 5000));
    close(cost(r, 0).interference, aheadDecoding ? 0.05 : 0, `ahead (aheadDecoding ${aheadDecoding})`);
    close(cost(r, 1).interference, 0, 'idle instance');
    assert.equal(r.instance, 1);
    // A sibling of the first request: on 0 that one has fewer cached tokens and goes after it under
    // lpm (not delayed by its prefill); on 1, r (nothing cached either) is ahead of its 0.12 s miss.
    const s = route(p, concat(seq(100, 0), seq(20, 500)));
    close(cost(s, 0).interference, 0, 'lpm: behind');
    close(cost(s, 1).interference, aheadDecoding ? 0.12 : 0, 'r ahead on 1');
  }
});

test('arrivals expected while a request waits queue behind it: its prefill delays them too', () => {
  for (const laterArrivals of [true, false]) {
    const p = plus(2, { laterArrivals, aheadDecoding: false });
    route(p, seq(100, 0), 0); // -> 0: 0.1 s queued
    route(p, seq(100, 1000), 1); // -> 1 (nothing queued there): 0.1 s queued
    // The window saw 2 requests in the 1 s since the first: 1 a second per instance, so 0.1
    // requests arrive in the 0.1 s wait and queue behind r, each delayed by r's P = 0.05.
    const r = route(p, seq(50, 5000), 1);
    close(cost(r, 0).queued, 0.1, 'queued ahead');
    close(cost(r, 0).interference, laterArrivals ? 1 * 0.1 * 0.05 : 0, `laterArrivals ${laterArrivals}`);
  }
  // Two arrivals a millisecond apart are not 2,000 a second: the rate covers at least 1 s.
  const burst = plus(2, { aheadDecoding: false });
  route(burst, seq(100, 0), 100);
  route(burst, seq(100, 1000), 100);
  close(cost(route(burst, seq(50, 5000), 100.001), 0).interference, 1 * 0.1 * 0.05, 'a burst');
  // Once a window has passed, its count over its 180 s: after a quiet spell, the few recent ones.
  const quiet = plus(2, { aheadDecoding: false });
  route(quiet, seq(100, 0), 0);
  quiet.tick(1000);
  route(quiet, seq(100, 1000), 1000); // -> 1 (0 still holds the first: it never finished)
  const r = route(quiet, seq(50, 5000), 1000);
  close(cost(r, 1).interference, (1 / 180 / 2) * 0.1 * 0.05, 'after a quiet spell');
});

test('behind a queue longer than their decodes, most requests decoding or queued ahead have finished', () => {
  for (const decodeEnds of [true, false]) {
    const p = plus(1, { decodeEnds, laterArrivals: false });
    const a = route(p, seq(100, 0), 0);
    p.requestFirstToken(a.id, 0.1); // decodes from 0.1, 45 tokens predicted
    route(p, seq(1000, 1000), 0.1); // 1 s of prefill queued
    const r = route(p, seq(50, 5000), 0.1);
    // The instance's own step (batch 2): 0.002 s, so a decode of 45 x 0.002 = 0.09 s. Of the 1 s wait,
    // a decodes through 0.09 s (counts 0.09), and the queued request, prefilled at a uniform time in
    // the wait, still decodes at its end with chance 0.09.
    close(cost(r, 0).queued, 1, 'wait');
    close(cost(r, 0).interference, (decodeEnds ? 0.18 : 2) * 0.05, `decodeEnds ${decodeEnds}`);
  }
  // A decode with more left than the wait counts whole, and so does one past its prediction (long
  // outputs run long).
  const p = plus(1, { laterArrivals: false, aheadDecoding: false });
  const a = route(p, seq(100, 0), 0);
  p.requestFirstToken(a.id, 0);
  route(p, seq(20, 1000), 0); // 0.02 s queued: a's 0.09 s decode outlasts it
  close(cost(route(p, seq(50, 5000), 0), 0).interference, 1 * 0.05, 'left > wait');
  const q = plus(1, { laterArrivals: false, aheadDecoding: false });
  const b = route(q, seq(100, 0), 0);
  q.requestFirstToken(b.id, 0.1);
  route(q, seq(1000, 1000), 0.1); // 1 s queued
  // At 0.6, b has decoded 0.5 s, past its predicted 0.09 s.
  close(cost(route(q, seq(50, 5000), 0.6), 0).interference, 1 * 0.05, 'outrun: decoding on');
});

test('whether a request still decodes after the wait does not depend on the prompt being routed', () => {
  // A step time that grows with context: the decode of those on the instance is paced by their own.
  const base = simpleCostModel();
  const costModel = { ...base, iterationTime: (b: BatchShape) => 0.001 * b.newTokens + 1e-6 * b.seqTokens };
  const delayed = (prompt: number) => {
    const p = new E2PlusPolicy({ costModel, evictionCost: false, laterArrivals: false });
    p.instanceAdded(0, { kvCapacityTokens: Number.POSITIVE_INFINITY }, 0);
    const a = route(p, seq(100, 0), 0);
    p.requestFirstToken(a.id, 0.1);
    route(p, seq(1000, 1000), 0.1);
    const c = cost(route(p, seq(prompt, 50_000), 0.1), 0);
    return c.interference / c.prefill;
  };
  close(delayed(100), delayed(8000), 'delayed count');
});

test('a migrated request decodes on, and is released from, its new instance', () => {
  const p = plus(2, { laterArrivals: false });
  const a = route(p, seq(100, 0), 0); // -> 0
  p.requestFirstToken(a.id, 0.1);
  p.migrationEnded(a.id, 0, 1, 'done', 0.2);
  const r = route(p, seq(50, 5000), 0.2);
  close(cost(r, 0).interference, 0, 'nothing decodes on 0 any more');
  close(cost(r, 1).interference, 0.05, 'a decodes on 1');
  p.requestFinished(a.id, 0.3, { promptTokens: 100, cachedTokens: 0, outputTokens: 45 });
  p.requestFinished(r.id, 0.4, { promptTokens: 50, cachedTokens: 0, outputTokens: 45 });
  const s = route(p, seq(50, 9000), 100);
  close(cost(s, 0).interference + cost(s, 1).interference, 0, 'nothing in flight anywhere');
});

test('invalid queueOrder is refused', () => {
  assert.throws(() => plus(1, { queueOrder: 'x' as 'lpm' }), /queueOrder/);
});

test("latencyPower: beyond the window's mean latency, r's own latency costs more and a slow request it delays weighs more", () => {
  const slowNeighbour = (latencyPower: number) => {
    const p = plus(2, { latencyPower, laterArrivals: false });
    const a = route(p, seq(100, 0), 0);
    p.requestFinished(a.id, 1, { promptTokens: 100, cachedTokens: 0, outputTokens: 45 }); // mean latency 1 s
    const b = route(p, seq(100, 1000), 1); // -> 0
    p.requestFirstToken(b.id, 1.1);
    return { p };
  };
  for (const latencyPower of [1, 2]) {
    const { p } = slowNeighbour(latencyPower);
    // At 4 s, b has been in flight 3 s and has outrun its 45-token decode: expected latency 3 s, three
    // times the mean, so under p = 2 each second it is delayed counts (3 / 1)^1 = 3.
    const weight = latencyPower === 2 ? 3 : 1;
    const d = route(p, seq(200, 5000), 4);
    close(cost(d, 0).interference, weight * 0.2, `r's 0.2 s prefill delays b (p ${latencyPower})`);
    // r's decode (45 steps) slows b's steps by 0.001 s each.
    close(cost(d, 0).decode, 45 * 0.002 + weight * 45 * 0.001, `r's decode slows b (p ${latencyPower})`);
    close(cost(d, 0).tail, 0, 'r itself is faster than the mean: counted as itself');
    assert.equal(d.instance, 1);
  }
  // A 2,000-token prompt on the idle instance: L = 2 + 0.045 s, past the 1 s mean, counts
  // 1 + (L^2 / 1 - 1) / 2 under p = 2: L and 0.5460125 s more.
  const { p } = slowNeighbour(2);
  const big = cost(route(p, seq(2000, 9000), 4), 1);
  close(big.tail, 1 + (2.045 ** 2 - 1) / 2 - 2.045, 'own latency beyond the mean');
  close(big.total, 2.045 + big.tail, 'total');
  // Before anything finishes there is no mean: the objective is the plain sum.
  const fresh = plus(1, { latencyPower: 2 });
  close(cost(route(fresh, seq(2000, 0), 0), 0).tail, 0, 'no reference yet');
});

test("latencyReference 'model': a request slow because its GPU is slow is not tail; 'model-flights' keeps r's own against the fleet", () => {
  const slow = simpleCostModel();
  const fast = twiceAsFast(slow);
  const run = (latencyReference: E2PlusOptions['latencyReference']) => {
    const p = new E2PlusPolicy({
      costModel: slow,
      evictionCost: false,
      prefillShare: false,
      laterArrivals: false,
      latencyPower: 2,
      latencyReference,
    });
    p.instanceAdded(0, { kvCapacityTokens: Number.POSITIVE_INFINITY }, 0);
    const a = route(p, seq(100, 0), 0);
    p.requestFinished(a.id, 3, { promptTokens: 100, cachedTokens: 0, outputTokens: 45 }); // 3 s on the slow GPU
    const b = route(p, seq(100, 1000), 3); // -> 0, the only instance
    p.requestFirstToken(b.id, 3.1);
    p.instanceAdded(1, { kvCapacityTokens: Number.POSITIVE_INFINITY, costModel: fast }, 3);
    const c = route(p, seq(100, 2000), 3);
    assert.equal(c.instance, 1, 'the idle fast instance');
    p.requestFinished(c.id, 4, { promptTokens: 100, cachedTokens: 0, outputTokens: 45 }); // 1 s on the fast one
    // Means: the fleet's 2 s, the slow model's 3 s, the fast one's 1 s. At 6 s, b (on the slow GPU,
    // its decode outrun) expects 3 s: 1.5 times the fleet's mean, the slow model's own.
    return route(p, seq(2000, 5000), 6);
  };
  for (const reference of ['fleet', 'model', 'model-flights'] as const) {
    const d = run(reference);
    const weight = reference === 'fleet' ? 1.5 : 1;
    close(cost(d, 0).interference, weight * 2, `r's 2 s prefill delays b by its weight (${reference})`);
    // r on the idle fast instance: L = 1 + 45 x 0.0005 s, under the fleet's 2 s mean but past the fast
    // model's 1 s.
    const L = 1 + 45 * 0.0005;
    const tail = reference === 'model' ? 1 + (L ** 2 - 1) / 2 - L : 0;
    close(cost(d, 1).tail, tail, `r's own tail on the fast instance (${reference})`);
  }
  assert.throws(() => plus(1, { latencyReference: 'gpu' as 'fleet' }), /latencyReference/);
});

test('latencyPower below 1 is refused', () => {
  assert.throws(() => plus(1, { latencyPower: 0.5 }), /latencyPower/);
});

test('a request the engine admitted is ahead whatever its cached share: running prefills take the budget first', () => {
  for (const startedAhead of [true, false]) {
    const p = plus(2, { startedAhead });
    const a = route(p, seq(100, 0));
    p.requestStarted(a.id, 0.1);
    const d = route(p, concat(seq(100, 0), seq(20, 500)), 0.1);
    close(cost(d, 0).queued, startedAhead ? 0.1 : 0, `queued ahead (startedAhead ${startedAhead})`);
  }
});

test('equal cost and load: the new prefix goes where more KV is free (spreads the working set)', () => {
  for (const memoryTieBreak of [true, false]) {
    const p = new E2PlusPolicy({
      costModel: simpleCostModel(),
      evictionCost: false,
      prefillShare: false,
      memoryTieBreak,
    });
    for (let i = 0; i < 2; i++) p.instanceAdded(i, { kvCapacityTokens: 1000 }, 0);
    const a = route(p, seq(100, 0));
    p.requestFinished(a.id, 1, { promptTokens: 100, cachedTokens: 0, outputTokens: 45 });
    const d = route(p, seq(100, 5000), 1);
    close(cost(d, 0).total, cost(d, 1).total, 'tied');
    assert.equal(d.instance, memoryTieBreak ? 1 : 0);
  }
});

test('an admitted prefill counts only what is left of it', () => {
  for (const remainingPrefill of [true, false]) {
    const p = plus(2, { remainingPrefill });
    const a = route(p, seq(100, 0));
    p.requestStarted(a.id, 0);
    const d = route(p, seq(50, 5000), 0.04);
    close(
      cost(d, 0).queued,
      remainingPrefill ? 0.06 : 0.1,
      `queued ahead (remainingPrefill ${remainingPrefill})`,
    );
  }
});

test('output length is estimated per key portion where the window has seen one, else over the cluster', () => {
  const p = plus(2);
  const long = seq(200, 0);
  const a = route(p, concat(long, seq(5, 1000)));
  p.requestFinished(a.id, 1, { promptTokens: 205, cachedTokens: 0, outputTokens: 100 });
  const b = route(p, seq(300, 50_000), 1);
  p.requestFinished(b.id, 2, { promptTokens: 300, cachedTokens: 0, outputTokens: 10 });
  // Same key portion as a: its 100 tokens; a fresh prompt: the cluster's (100 + 10) / 2.
  const c = route(p, concat(long, seq(5, 2000)), 2);
  close(cost(c, 1).decode, 100 * 0.001, 'per prefix');
  assert.equal(c.instance, 0, 'the holder');
  const d = route(p, seq(50, 90_000), 2);
  close(cost(d, 1).decode, 55 * 0.001, 'cluster average (nothing in flight on 1)');
});

test('the global LRU model evicts for queued requests only until the instance reports evictions itself', () => {
  for (const reported of [false, true]) {
    const p = new E2PlusPolicy({ costModel: simpleCostModel(), evictionCost: false });
    p.instanceAdded(0, { kvCapacityTokens: 1000 }, 0);
    const a = route(p, seq(600, 0));
    p.requestFinished(a.id, 1, { promptTokens: 600, cachedTokens: 0, outputTokens: 45 });
    // The engine's report (here of nothing: the tokens past 600 of a's prompt) makes it the authority.
    if (reported) p.instanceEvicted(0, seq(600, 0), 600, 1);
    // Queued, not resident yet: the model counts its 600 tokens at once and evicts 200 of a's.
    route(p, seq(600, 5000), 1);
    const d = route(p, seq(600, 0), 1);
    assert.equal(d.matchedTokens, reported ? 600 : 400, `matched (reported ${reported})`);
  }
});

test("prefillShare: r's decode stretches by 1 / (1 - the instance's recent prefill share), at most maxPrefillShare", () => {
  for (const prefillShare of [true, false]) {
    const p = plus(2, { prefillShare });
    const a = route(p, seq(1000, 0), 0); // -> 0: 1 s of prefill
    p.requestFinished(a.id, 1.5, { promptTokens: 1000, cachedTokens: 0, outputTokens: 45 });
    // The window covers the 10 s since the first request: 0 spent 1 s of it prefilling, 1 none.
    const r = route(p, seq(50, 5000), 10);
    close(cost(r, 0).decode, (45 * 0.001) / (prefillShare ? 0.9 : 1), `prefillShare ${prefillShare}: 0`);
    close(cost(r, 1).decode, 45 * 0.001, `prefillShare ${prefillShare}: 1`);
  }
  // 100 s of prefill routed to 0 in the 1 s the window covers: the share is capped (0.5 by default).
  for (const [maxPrefillShare, stretch] of [
    [undefined, 2],
    [0.9, 10],
  ] as const) {
    const p = plus(2, { prefillShare: true, ...(maxPrefillShare === undefined ? {} : { maxPrefillShare }) });
    route(p, seq(100_000, 0), 0);
    // Its own decode at batch 2, stretched, and what it adds to the one in flight there.
    close(
      cost(route(p, seq(50, 200_000), 1), 0).decode,
      stretch * 45 * 0.002 + 45 * 0.001,
      `cap ${maxPrefillShare}`,
    );
  }
  assert.throws(() => plus(1, { maxPrefillShare: 1 }), /maxPrefillShare' must be >= 0 and < 1, got 1/);
});

test("instanceContexts: r's decode step is the instance's, at its flights' contexts with r's", () => {
  const base = simpleCostModel();
  const costModel = { ...base, iterationTime: (b: BatchShape) => 0.001 * b.newTokens + 1e-6 * b.seqTokens };
  const step = (batch: number, context: number) => 0.001 * batch + 1e-6 * batch * (context + 1);
  for (const instanceContexts of [true, false]) {
    const p = new E2PlusPolicy({ costModel, evictionCost: false, prefillShare: false, instanceContexts });
    p.instanceAdded(0, { kvCapacityTokens: Number.POSITIVE_INFINITY }, 0);
    const a = route(p, seq(10_000, 0), 0);
    p.requestFirstToken(a.id, 0.1); // decodes at a context of 10,000 + 45 / 2
    const r = route(p, seq(100, 50_000), 0.1);
    const mine = 100 + 45 / 2;
    const theirs = 10_000 + 45 / 2;
    const withIt = instanceContexts ? step(2, (mine + theirs) / 2) : step(2, mine);
    const without = instanceContexts ? step(1, theirs) : step(1, mine);
    close(cost(r, 0).decode, 45 * withIt + 45 * (withIt - without), `instanceContexts ${instanceContexts}`);
  }
});

test('a fleet of mixed GPUs: each instance is priced with its own cost model (InstanceInfo.costModel)', () => {
  const slow = simpleCostModel();
  const fast = twiceAsFast(slow);
  const p = new E2PlusPolicy({ costModel: slow, evictionCost: false, prefillShare: false });
  p.instanceAdded(0, { kvCapacityTokens: Number.POSITIVE_INFINITY }, 0);
  p.instanceAdded(1, { kvCapacityTokens: Number.POSITIVE_INFINITY, costModel: fast }, 0);
  const d = route(p, seq(100, 0));
  // Idle: P + out x step(1) = 0.1 + 45 x 0.001 on the policy's model, 0.05 + 45 x 0.0005 on the fast one.
  close(cost(d, 0).total, 0.1 + 0.045, 'instance 0 on the policy model');
  close(cost(d, 1).total, 0.05 + 0.0225, 'instance 1 on its own');
  assert.equal(d.instance, 1, 'before: a tie on one model, to the lower id');
  // Its queued prefill is the fast instance's: the next request waits 0.05 s there.
  close(cost(route(p, seq(100, 1000)), 1).queued, 0.05, 'queued on instance 1');
});

test('displacement: a miss where the cache churns costs the share of evicted tokens wanted again x its prefill', () => {
  for (const displacement of [true, false]) {
    const p = plus(2, { displacement });
    const a = route(p, seq(300, 0), 0); // -> 0
    p.requestFinished(a.id, 1, { promptTokens: 300, cachedTokens: 0, outputTokens: 45 });
    const b = route(p, seq(300, 5000), 1); // -> 0 (tie, lower id)
    p.requestFinished(b.id, 2, { promptTokens: 300, cachedTokens: 0, outputTokens: 45 });
    // Instance 0 evicts both prompts (600 tokens); then a's prompt comes again: 300 of them are wanted.
    p.instanceEvicted(0, seq(300, 0), 0, 3);
    p.instanceEvicted(0, seq(300, 5000), 0, 3);
    const d = route(p, seq(300, 0), 4);
    assert.equal(d.matchedTokens, 0, 'cached nowhere');
    // Both miss all 300 tokens (P = 0.3); only 0's cache churns: 0.5 x 0.3 more there.
    close(cost(d, 0).displacement, displacement ? 0.15 : 0, `displacement on 0 (${displacement})`);
    close(cost(d, 1).displacement, 0, 'no eviction on 1: nothing displaced');
    close(cost(d, 0).total - cost(d, 1).total, displacement ? 0.15 : 0, 'the only difference');
    assert.equal(d.instance, displacement ? 1 : 0);
  }
});

test('displacement: nothing once the evictions leave the window, and nothing where evicted tokens are never wanted', () => {
  const p = plus(2, { windowSeconds: 10 });
  const a = route(p, seq(300, 0), 0);
  p.requestFinished(a.id, 1, { promptTokens: 300, cachedTokens: 0, outputTokens: 45 });
  p.instanceEvicted(0, seq(300, 0), 0, 2);
  // A new prompt: nothing evicted is wanted again, so the share is 0 although 0 churns.
  close(cost(route(p, seq(300, 9000), 3), 0).displacement, 0, 'share 0');
  // The eviction leaves the window (and with it a's window count): no churn, no share.
  close(cost(route(p, seq(300, 0), 20), 0).displacement, 0, 'outside the window');
});
