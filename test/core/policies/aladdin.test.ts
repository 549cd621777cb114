import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AladdinOptions } from '../../../src/core/policies/aladdin/options.ts';
import { AladdinPolicy } from '../../../src/core/policies/aladdin/policy.ts';
import { createGlobalPolicy } from '../../../src/core/policies/registry.ts';
import type { Role, RouteRequest } from '../../../src/core/types.ts';
import { eq3CostModel } from '../../helpers/eq3-cost-model.ts';
import { seq } from '../../helpers/simple-cost-model.ts';

const costModel = eq3CostModel();

function policy(
  options: AladdinOptions,
  roles: readonly Role[],
  kvCapacityTokens = Number.POSITIVE_INFINITY,
) {
  const p = new AladdinPolicy(
    { refit: false, defaultOutputTokens: 100, theta: 1, gamma: 0.5, ...options },
    { costModel, slo: { ttft: 10, tpot: 0.05 } },
  );
  roles.forEach((role, i) => {
    p.instanceAdded(i, { kvCapacityTokens, ...(role === 'mixed' ? {} : { role }) }, 0);
  });
  return p;
}

let n = 0;
const request = (tokens: number, extra: Partial<RouteRequest> = {}): RouteRequest => ({
  id: `r${n++}`,
  tokens: seq(tokens, 0),
  arrival: 0,
  ...extra,
});

/** Route and admit (its prefill started: TTFT no longer binds it). */
function routeStarted(p: AladdinPolicy, tokens: number) {
  const r = request(tokens);
  const d = p.route(r, 0);
  p.requestStarted(r.id, 0);
  return d;
}

test('best fit fills the most loaded worker that fits, where least-load spreads', () => {
  const p = policy({}, ['mixed', 'mixed', 'mixed']);
  const chosen = [1, 2, 3, 4].map(() => routeStarted(p, 100));
  assert.deepEqual(
    chosen.map((d) => d.instance),
    [0, 0, 0, 0],
  );
  assert.ok(chosen.every((d) => d.branch === 'best-fit'));
  assert.equal(p.workersWanted(0), 1);
});

test('(b) ATGT: the fourth 10,000-token prompt passes Eq. 4 on a worker holding three and goes to the next', () => {
  // Each counts 10,000 + 0.5 x 100 = 10,050 tokens; 3 x 10,050 <= 37,000, 4 x 10,050 > 36,000.
  // Decode workers, so that (d) (these prefills would spend each other's decode slack) stays out.
  const p = policy({}, ['prefill', 'decode', 'decode']);
  const chosen = [1, 2, 3, 4].map(() => {
    const r = request(10_000);
    p.route(r, 0);
    p.requestStarted(r.id, 0);
    p.requestFirstToken(r.id, 0);
    return p.routeDecode(r.id, 0, 10_000, 0);
  });
  assert.deepEqual(chosen, [1, 1, 1, 2]);
});

test('(b) with theta: 0.75 of the limit holds two of them, not three', () => {
  const p = policy({ theta: 0.75 }, ['mixed', 'mixed']);
  const chosen = [1, 2, 3].map(() => routeStarted(p, 10_000).instance);
  assert.deepEqual(chosen, [0, 0, 1]);
});

test('(c) TTFT: prompts not yet started must all prefill within the tightest remaining TTFT', () => {
  const p = policy({ ttft: 1 }, ['mixed', 'mixed']);
  // 5,000 tokens: 0.516 s; two of them 1.02 s > 1 s.
  assert.equal(p.route(request(5000), 0).instance, 0);
  assert.equal(p.route(request(5000), 0).instance, 1);
  // A request's own SLO comes first: 0.3 s does not fit beside 5,000 queued tokens anywhere.
  const d = p.route(request(1000, { slo: { ttft: 0.3, tpot: 0.05 } }), 0);
  assert.equal(d.branch, 'overflow');
});

test('(e) KV: the peak of the future iterations within the worker memory', () => {
  // Each holds up to 300 + 100 tokens; two peak at 800 - 1 before the first ends, three at 1,200 > 1,000.
  const p = policy({}, ['mixed', 'mixed'], 1000);
  assert.deepEqual(
    [1, 2, 3].map(() => routeStarted(p, 300).instance),
    [0, 0, 1],
  );
});

test('when no worker fits, it runs on the least loaded one and asks for a virtual worker', () => {
  const p = policy({}, ['mixed'], 1000);
  routeStarted(p, 300);
  routeStarted(p, 300);
  assert.equal(p.workersWanted(0), 1);
  const r = request(300);
  const d = p.route(r, 0);
  assert.deepEqual([d.instance, d.branch], [0, 'overflow']);
  assert.equal(p.workersWanted(0), 2);
  p.requestFinished(r.id, 1, { promptTokens: 300, cachedTokens: 0, outputTokens: 100 });
  assert.equal(p.workersWanted(1), 1);
});

test('split phase: prefill by TTFT alone, decode by best fit when the KV is ready', () => {
  const p = policy({}, ['prefill', 'prefill', 'decode', 'decode']);
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const r = request(200);
    const d = p.route(r, 0);
    assert.equal(d.decode, 'at-kv-ready');
    assert.equal(d.branch, 'prefill-best-fit');
    assert.ok(d.instance === 0 || d.instance === 1);
    p.requestStarted(r.id, 0);
    p.requestFirstToken(r.id, 0.1);
    ids.push(r.id);
  }
  const decodes = ids.map((id) => p.routeDecode(id, 0, 200, 0.1));
  assert.deepEqual(decodes, [2, 2, 2]);
  assert.equal(p.inflight(2), 3);
  assert.equal(p.workersWanted(0.1), 1);
});

test('the registry builds it with the run SLO, and refuses knobs out of range', () => {
  const p = createGlobalPolicy('aladdin', { costModel, slo: { ttft: 2, tpot: 0.05 } });
  assert.equal(p.name, 'aladdin');
  assert.throws(
    () => createGlobalPolicy('aladdin', { costModel }, { gamma: 2 }),
    /gamma must be in \[0, 1\]/,
  );
  assert.throws(
    () => createGlobalPolicy('aladdin', { costModel }, { theta: 0 }),
    /theta must be in \(0, 1\]/,
  );
});

test('an overrun is re-predicted at the tick: the longer output then weighs on placement', () => {
  // One decoding request, predicted 100 tokens; after 5 s at 11-13 ms a step it has run ~380-440.
  const p = policy({}, ['mixed', 'mixed'], 800);
  const r = request(300);
  p.route(r, 0);
  p.requestStarted(r.id, 0);
  p.requestFirstToken(r.id, 0.05);
  const probe = (now: number) => {
    const q = request(300);
    const d = p.route(q, now);
    p.requestFinished(q.id, now, { promptTokens: 300, cachedTokens: 0, outputTokens: 1 });
    return d.instance;
  };
  // At 5 s, as predicted: it has 1 token to go (estimate capped at the prediction): a probe fits beside it.
  assert.equal(probe(5), 0);
  p.tick(5);
  // Re-predicted (doubled, past what it ran): ~380 or more run, so 680 held plus the probe's 300 pass 800.
  assert.equal(probe(5), 1);
});

test('(d) decode slack: a request not yet at its first token decodes after the prompts placed behind it, so it counts', () => {
  // A is admitted, its prefill under way, predicted 5 tokens (its max_tokens): its slack is about
  // 5 x (50 ms - 13 ms) = 0.185 s. A 1,000-token prompt (0.11 s) fits in it and spends it; a second
  // one no longer does, before or after A's first token. A 5,000-token prompt (0.52 s) never fits.
  const p = policy({}, ['mixed', 'mixed']);
  const a = request(100, { outputLenHint: 5 });
  p.route(a, 0);
  p.requestStarted(a.id, 0);
  const big = request(5000);
  assert.equal(p.route(big, 0).instance, 1, 'beyond A’s slack, queued or not');
  p.requestFinished(big.id, 0, { promptTokens: 5000, cachedTokens: 0, outputTokens: 1 });
  const b = request(1000);
  assert.equal(p.route(b, 0).instance, 0);
  p.requestFirstToken(a.id, 0.02);
  assert.equal(p.route(request(1000), 0.02).instance, 1, 'B took A’s slack while A was still prefilling');
});

test('(d) decode slack: a request predicted at one token has no decode to protect, so it sets no bound', () => {
  // A decodes nothing: its one token comes from its prefill. Counted as 1 x (50 ms - 13 ms) = 37 ms of
  // slack, it would send a 1,000-token prompt (0.11 s) to the other worker. B, predicted 2 tokens, has one
  // decode step of slack (37 ms) and does bound it.
  const p = policy({}, ['mixed', 'mixed']);
  const a = request(100, { outputLenHint: 1 });
  p.route(a, 0);
  p.requestStarted(a.id, 0);
  assert.equal(p.route(request(1000), 0).instance, 0);
  const q = policy({}, ['mixed', 'mixed']);
  const b = request(100, { outputLenHint: 2 });
  q.route(b, 0);
  q.requestStarted(b.id, 0);
  assert.equal(q.route(request(1000), 0).instance, 1);
});

test('re-balancing checks (d) with the moves made before it: the second prompt no longer fits where the first went', () => {
  const p = policy({}, ['mixed', 'mixed']);
  const start = (r: RouteRequest, instance: number, firstToken: number) => {
    assert.equal(p.route(r, 0).instance, instance);
    p.requestStarted(r.id, 0);
    p.requestFirstToken(r.id, firstToken);
    return r.id;
  };
  // Worker 0: three decoding requests that will outrun their 100 predicted tokens, and two queued
  // 1,000-token prompts (0.112 s of prefill each).
  for (let i = 0; i < 3; i++) start(request(300), 0, 0.05);
  const prompts = [request(1000), request(1000)].map((r) => {
    assert.equal(p.route(r, 0).instance, 0);
    return r.id;
  });
  // Worker 1 (TTFT 0.15 s: not behind worker 0's queued prompts): three requests that will finish early,
  // and E, predicted 5 tokens: 4 decode steps of 50 ms - 13 to 15 ms, about 0.14 s of slack.
  const tight = { slo: { ttft: 0.15, tpot: 0.05 } };
  const early = [0, 1, 2].map(() => start(request(300, tight), 1, 0.05));
  start(request(100, { ...tight, outputLenHint: 5 }), 1, 4.99);
  for (const id of early) p.requestFinished(id, 1, { promptTokens: 300, cachedTokens: 0, outputTokens: 10 });
  // Worker 0 is over plan and worker 1 under by two prompts' worth, but E's slack holds one of them.
  p.tick(5);
  const moves = p.migrations(5);
  assert.equal(moves.length, 1);
  assert.ok(prompts.includes(moves[0]!.id));
});

test('a request moved before it started keeps none of the slack charged to it where it was', () => {
  // P, predicted 5 tokens (~0.15 s of slack), queued on worker 0; a 1,000-token prompt placed behind it
  // there takes 0.11 s of it. P moves to the empty worker 1, where nothing follows it: its full slack
  // admits Q (1,000 tokens, 0.11 s; its 0.15 s TTFT keeps it off worker 0, behind the queued prompt).
  const p = policy({}, ['mixed', 'mixed']);
  const moved = request(100, { outputLenHint: 5 });
  assert.equal(p.route(moved, 0).instance, 0);
  assert.equal(p.route(request(1000), 0).instance, 0);
  p.migrationEnded(moved.id, 0, 1, 'done', 0);
  const q = p.route(request(1000, { slo: { ttft: 0.15, tpot: 0.05 } }), 0);
  assert.deepEqual([q.instance, q.branch], [1, 'best-fit']);
});

test('re-balancing (Algorithm 2): a request not started leaves the worker whose request outran for one where one finished early', () => {
  const setup = (options: AladdinOptions = {}) => {
    // Memory for two 300-token requests: A and B decode on worker 0, C on worker 1; Q waits on worker 0.
    const p = policy(options, ['mixed', 'mixed'], 1000);
    const ids = [300, 300, 300].map((tokens) => {
      const r = request(tokens);
      p.route(r, 0);
      p.requestStarted(r.id, 0);
      p.requestFirstToken(r.id, 0.05);
      return r.id;
    });
    const q = request(50);
    assert.equal(p.route(q, 0.05).instance, 0);
    assert.deepEqual([p.inflight(0), p.inflight(1)], [3, 1]);
    return { p, c: ids[2]!, q: q.id };
  };
  // Balanced: nothing outran, nothing finished early: nothing moves.
  const calm = setup();
  calm.p.tick(0.5);
  assert.deepEqual(calm.p.migrations(0.5), []);
  // At 5 s A and B have run ~380 tokens of a predicted 100 (re-predicted: worker 0 over plan); C finished
  // after 10 of its 100 (worker 1 under plan): Q moves, as a queued move.
  const { p, c, q } = setup();
  p.requestFinished(c, 1, { promptTokens: 300, cachedTokens: 0, outputTokens: 10 });
  p.tick(5);
  const moves = p.migrations(5);
  assert.deepEqual(moves, [{ id: q, from: 0, to: 1, queued: true }]);
  p.migrationEnded(q, 0, 1, 'done', 5);
  assert.deepEqual([p.inflight(0), p.inflight(1)], [2, 1]);
  // Taken: asked once.
  assert.deepEqual(p.migrations(5), []);
  // Off: the same errors move nothing.
  const off = setup({ rebalance: false });
  off.p.requestFinished(off.c, 1, { promptTokens: 300, cachedTokens: 0, outputTokens: 10 });
  off.p.tick(5);
  assert.deepEqual(off.p.migrations(5), []);
});
