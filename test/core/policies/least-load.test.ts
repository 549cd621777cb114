import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { LeastLoadPolicy } from '../../../src/core/policies/least-load.ts';
import { addInstances, req, routeIdle, run } from './helpers.ts';

const done = { promptTokens: 4, cachedTokens: 0, outputTokens: 1 };

describe('least-load', () => {
  it('picks the instance with the fewest in-flight requests', () => {
    const p = addInstances(new LeastLoadPolicy(), 3);
    const ids = Array.from({ length: 6 }, (_, i) => `q${i}`);
    const placed = ids.map((id) => p.route(req(run(0, 4), id), 0).instance);
    assert.deepEqual(placed, [0, 1, 2, 0, 1, 2]);
    p.requestFinished('q1', 1, done);
    p.requestFailed('q4', 1);
    const d = p.route(req(run(0, 4)), 1);
    assert.equal(d.instance, 1);
    assert.equal(d.branch, 'load');
    assert.equal(p.inflight(1), 1);
  });

  it("rotates ties by default and sends every tie to the lowest id with 'lowest-id'", () => {
    const rotating = addInstances(new LeastLoadPolicy(), 3);
    assert.deepEqual(
      [0, 1, 2, 3].map(() => routeIdle(rotating, run(0, 4))),
      [0, 1, 2, 0],
    );
    const lowest = addInstances(new LeastLoadPolicy({ tieBreak: 'lowest-id' }), 3);
    assert.deepEqual(
      [0, 1, 2, 3].map(() => routeIdle(lowest, run(0, 4))),
      [0, 0, 0, 0],
    );
  });

  it('always routes to a minimum and returns every counter to zero', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('route' as const) }),
      fc.record({ kind: fc.constantFrom('finish' as const, 'fail' as const), pick: fc.nat() }),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.constantFrom('rotate' as const, 'lowest-id' as const),
        fc.array(op, { maxLength: 80 }),
        (n, tieBreak, ops) => {
          const p = addInstances(new LeastLoadPolicy({ tieBreak }), n);
          const open: string[] = [];
          let next = 0;
          for (const o of ops) {
            if (o.kind === 'route') {
              const min = Math.min(...Array.from({ length: n }, (_, i) => p.inflight(i)));
              const id = `x${next++}`;
              const d = p.route(req(run(0, 4), id), 0);
              assert.equal(p.inflight(d.instance), min + 1);
              open.push(id);
            } else if (open.length > 0) {
              const [id] = open.splice(o.pick % open.length, 1);
              if (o.kind === 'finish') p.requestFinished(id!, 0, done);
              else p.requestFailed(id!, 0);
            }
          }
          for (const id of open) p.requestFinished(id, 0, done);
          for (let i = 0; i < n; i++) assert.equal(p.inflight(i), 0);
        },
      ),
    );
  });
});
