import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SalPolicy } from '../../../src/core/policies/sal.ts';
import { addInstances, req, run, signal } from './helpers.ts';

const totals = (costs: readonly { instance: number; total: number }[]) => costs.map((c) => c.total);

describe('sal', () => {
  it('falls back to in-flight counts before any poll', () => {
    const p = addInstances(new SalPolicy({ units: 'tokens' }), 3);
    const d = p.route(req(run(0, 100)), 0);
    assert.equal(d.branch, 'fallback');
    assert.equal(p.route(req(run(0, 100)), 0).instance, 1);
    assert.equal(p.route(req(run(0, 100)), 0).instance, 2);
  });

  it('computes L = max(Q, max(0, m - F) / R) with R = (I + O) / O from the defaults', () => {
    const p = addInstances(new SalPolicy({ units: 'tokens' }), 3);
    assert.equal(p.memoryFreeRate, 5); // (1024 + 256) / 256
    p.loadSignal(0, signal({ queuedPrefillTokens: 100, freeKvTokens: 50 }), 0);
    p.loadSignal(1, signal({ queuedPrefillTokens: 300, freeKvTokens: 10_000 }), 0);
    p.loadSignal(2, signal({ queuedPrefillTokens: 0, freeKvTokens: 0 }), 0);
    const d = p.route(req(run(0, 200)), 0);
    // Q: 100+200, 300+200, 0+200; memory: 150/5, 0, 200/5.
    assert.deepEqual(totals(d.costs), [300, 500, 200]);
    assert.equal(d.instance, 2);
    assert.equal(d.branch, 'load');
    // Routed tokens count until the next poll: instance 2 now has Q = 200 + 200, F = -200.
    const e = p.route(req(run(0, 200)), 0);
    assert.deepEqual(totals(e.costs), [300, 500, 400]);
    assert.equal(e.instance, 0);
    // A fresh poll replaces what was added.
    p.loadSignal(2, signal({ queuedPrefillTokens: 10, freeKvTokens: 0 }), 0.1);
    assert.equal(p.route(req(run(0, 200)), 0.1).costs[2]!.total, 210);
  });

  it('learns R from finished requests', () => {
    const p = addInstances(new SalPolicy({ averageHorizon: 2, units: 'tokens' }), 1);
    p.loadSignal(0, signal(), 0);
    const r = req(run(0, 10));
    p.route(r, 0);
    p.requestFinished(r.id, 1, { promptTokens: 300, cachedTokens: 0, outputTokens: 100 });
    assert.equal(p.memoryFreeRate, 4); // (300 + 100) / 100
    const s = req(run(0, 10));
    p.route(s, 1);
    p.requestFinished(s.id, 2, { promptTokens: 100, cachedTokens: 0, outputTokens: 100 });
    assert.equal(p.memoryFreeRate, 3); // means 200 and 100
    const f = req(run(0, 10));
    p.route(f, 2);
    p.requestFailed(f.id, 3);
    assert.equal(p.memoryFreeRate, 3); // failures carry no counts
  });

  it('treats an instance not polled yet as empty with its whole capacity free', () => {
    const p = addInstances(new SalPolicy({ units: 'tokens' }), [0, 1], 1000);
    p.loadSignal(0, signal({ queuedPrefillTokens: 50, freeKvTokens: 5000 }), 0);
    const d = p.route(req(run(0, 2000)), 0);
    // Instance 1: Q = 2000, memory (2000 - 1000) / 5 = 200; instance 0: Q = 2050.
    assert.deepEqual(totals(d.costs), [2050, 2000]);
    assert.equal(d.instance, 1);
  });

  it("in 'iterations' units weighs missing memory against steps of queued prefill", () => {
    const p = new SalPolicy({ units: 'iterations', batchTokenCap: 1000 });
    p.instanceAdded(0, { kvCapacityTokens: 1e6 }, 0);
    p.instanceAdded(1, { kvCapacityTokens: 1e6, maxBatchedTokens: 500 }, 0);
    p.loadSignal(0, signal({ queuedPrefillTokens: 0, freeKvTokens: 0, running: 10 }), 0);
    p.loadSignal(1, signal({ queuedPrefillTokens: 3000, freeKvTokens: 1e5, running: 10 }), 0);
    const d = p.route(req(run(0, 1000)), 0);
    // 0: max(1000/1000, 1000 / (5 x 10)) = 20 steps; 1: max(4000/500, 0) = 8 steps.
    assert.deepEqual(totals(d.costs), [20, 8]);
    assert.equal(d.instance, 1);
  });

  it('breaks equal loads by in-flight count, then id', () => {
    const p = addInstances(new SalPolicy({ units: 'tokens' }), 2);
    p.loadSignal(0, signal({ queuedPrefillTokens: 100, freeKvTokens: 1e6 }), 0);
    p.loadSignal(1, signal({ queuedPrefillTokens: 100, freeKvTokens: 1e6 }), 0);
    assert.equal(p.route(req(run(0, 0)), 0).instance, 0);
    assert.equal(p.route(req(run(0, 0)), 0).instance, 1);
  });

  it('rejects nonsense options', () => {
    assert.throws(() => new SalPolicy({ initialAvgOutputTokens: 0 }));
    assert.throws(() => new SalPolicy({ units: 'seconds' as never }));
  });
});
