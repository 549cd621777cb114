import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { PowerOfTwoPolicy } from '../../../src/core/policies/power-of-two.ts';
import { addInstances, req, run, signal } from './helpers.ts';

const done = { promptTokens: 4, cachedTokens: 0, outputTokens: 1 };

describe('power-of-two', () => {
  it('compares two distinct instances and never picks the heavier one', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 10 }),
        fc.integer({ min: 0, max: 1000 }),
        fc.array(fc.oneof(fc.constant(-1), fc.nat()), { maxLength: 120 }),
        (n, seed, ops) => {
          const p = addInstances(new PowerOfTwoPolicy({ seed }), n);
          const open: string[] = [];
          let next = 0;
          for (const o of ops) {
            if (o >= 0 && open.length > 0) {
              const [id] = open.splice(o % open.length, 1);
              p.requestFinished(id!, 0, done);
              continue;
            }
            const before = Array.from({ length: n }, (_, i) => p.inflight(i));
            const id = `x${next++}`;
            const d = p.route(req(run(0, 4), id), 0);
            open.push(id);
            assert.equal(d.costs.length, 2);
            const [a, b] = d.costs;
            assert.notEqual(a!.instance, b!.instance);
            assert.equal(a!.total, before[a!.instance]);
            assert.equal(b!.total, before[b!.instance]);
            assert.ok(d.instance === a!.instance || d.instance === b!.instance);
            assert.equal(before[d.instance], Math.min(a!.total, b!.total));
            assert.equal(d.branch, 'load');
          }
        },
      ),
    );
  });

  it('is deterministic for a seed', () => {
    const seq = (seed: number) => {
      const p = addInstances(new PowerOfTwoPolicy({ seed }), 8);
      return Array.from({ length: 100 }, () => p.route(req(run(0, 4)), 0).instance);
    };
    assert.deepEqual(seq(5), seq(5));
    assert.notDeepEqual(seq(5), seq(6));
  });

  it('routes the only instance there is', () => {
    const p = addInstances(new PowerOfTwoPolicy(), [4]);
    assert.equal(p.route(req(run(0, 4)), 0).instance, 4);
  });

  it("with signal 'polled' compares queued prefill tokens plus what it sent since the poll", () => {
    const p = addInstances(new PowerOfTwoPolicy({ signal: 'polled' }), 2);
    p.loadSignal(0, signal({ queuedPrefillTokens: 1000 }), 0);
    p.loadSignal(1, signal({ queuedPrefillTokens: 10 }), 0);
    // With two instances both are always the candidates.
    const first = p.route(req(run(0, 600)), 0);
    assert.equal(first.instance, 1);
    assert.deepEqual(first.costs.map((c) => [c.instance, c.total]).sort(), [
      [0, 1000],
      [1, 10],
    ]);
    assert.equal(p.route(req(run(0, 600)), 0).instance, 1); // 610 < 1000
    assert.equal(p.route(req(run(0, 600)), 0).instance, 0); // 1210 > 1000
    p.loadSignal(0, signal({ queuedPrefillTokens: 5000 }), 0.1);
    p.loadSignal(1, signal({ queuedPrefillTokens: 0 }), 0.1);
    assert.equal(p.route(req(run(0, 600)), 0.1).instance, 1);
  });

  it("with signal 'polled' compares in-flight counts until both candidates were polled", () => {
    const p = addInstances(new PowerOfTwoPolicy({ signal: 'polled' }), 2);
    p.route(req(run(0, 4)), 0); // some instance now has 1 in flight
    const busy = p.inflight(0) === 1 ? 0 : 1;
    p.loadSignal(busy, signal({ queuedPrefillTokens: 0 }), 0);
    assert.equal(p.route(req(run(0, 4)), 0).instance, 1 - busy);
  });
});
