import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { hashTokens } from '../../../src/core/hash.ts';
import { PrefixHashPolicy } from '../../../src/core/policies/prefix-hash.ts';
import { addInstances, concat, req, routeIdle, run } from './helpers.ts';

const prefix = (k: number) => run(k * 1000, 300);
const done = { promptTokens: 300, cachedTokens: 0, outputTokens: 1 };

describe('prefix-hash', () => {
  it('sends prompts sharing their first prefixTokens tokens to the same instance', () => {
    const p = addInstances(new PrefixHashPolicy(), 8);
    for (let k = 0; k < 50; k++) {
      const home = routeIdle(p, concat(prefix(k), run(1, 10)));
      assert.equal(routeIdle(p, concat(prefix(k), run(99, 40))), home);
      // Only the first 256 tokens count: a difference at token 280 changes nothing.
      const late = concat(prefix(k));
      late[280] = 7;
      assert.equal(routeIdle(p, late), home);
      assert.equal(home, p.home(prefix(k)));
    }
    assert.equal(p.route(req(prefix(0)), 0).branch, 'hash');
  });

  it('spreads different prefixes over all instances', () => {
    const p = addInstances(new PrefixHashPolicy(), 8);
    const counts = new Array<number>(8).fill(0);
    const prompts = 4000;
    for (let k = 0; k < prompts; k++) counts[routeIdle(p, prefix(k))]!++;
    for (const c of counts) assert.ok(c > prompts / 8 / 2 && c < (prompts / 8) * 2, `counts ${counts}`);
  });

  it('never lets an accepting instance exceed ceil(loadFactor x average)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.constantFrom(1, 1.25, 2),
        fc.array(fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constant(-1)), { maxLength: 200 }),
        (n, loadFactor, ops) => {
          const p = addInstances(new PrefixHashPolicy({ loadFactor }), n);
          const open: string[] = [];
          let next = 0;
          for (const o of ops) {
            if (o < 0) {
              if (open.length > 0) p.requestFinished(open.shift()!, 0, done);
              continue;
            }
            const id = `x${next++}`;
            // Few, hot prefixes: without the bound everything would pile up on a few instances.
            const d = p.route(req(prefix(o), id), 0);
            open.push(id);
            const bound = Math.ceil((loadFactor * open.length) / n);
            assert.ok(p.inflight(d.instance) <= bound, `${p.inflight(d.instance)} > ${bound}`);
          }
        },
      ),
    );
  });

  it('spills a hot prefix to the same next instances on the ring', () => {
    const p = addInstances(new PrefixHashPolicy(), 4);
    const first = Array.from({ length: 8 }, (_, i) => p.route(req(prefix(1), `a${i}`), 0).instance);
    for (let i = 0; i < 8; i++) p.requestFinished(`a${i}`, 0, done);
    const again = Array.from({ length: 8 }, (_, i) => p.route(req(prefix(1), `b${i}`), 0).instance);
    assert.deepEqual(again, first);
    assert.equal(first[0], p.home(prefix(1)));
    assert.ok(new Set(first).size > 1);
  });

  it('moves only the keys the new instance takes over when one is added', () => {
    const p = addInstances(new PrefixHashPolicy(), 4);
    const keys = 2000;
    const before = Array.from({ length: keys }, (_, k) => routeIdle(p, prefix(k)));
    p.instanceAdded(4, { kvCapacityTokens: 1000 }, 0);
    const after = Array.from({ length: keys }, (_, k) => routeIdle(p, prefix(k)));
    let moved = 0;
    for (let k = 0; k < keys; k++) {
      if (after[k] === before[k]) continue;
      moved++;
      assert.equal(after[k], 4);
    }
    // Expected share 1/5 of the keys.
    assert.ok(moved > keys * 0.12 && moved < keys * 0.28, `moved ${moved}`);
    // Draining it sends those keys back where they were.
    p.instanceDrained(4, 0);
    assert.deepEqual(
      Array.from({ length: keys }, (_, k) => routeIdle(p, prefix(k))),
      before,
    );
  });
});

describe('hashTokens', () => {
  it('depends on the first `limit` tokens only, and on their count', () => {
    const a = run(0, 300);
    const b = run(0, 300);
    b[299] = 1;
    assert.equal(hashTokens(a, 256), hashTokens(b, 256));
    assert.notEqual(hashTokens(a, 300), hashTokens(b, 300));
    assert.notEqual(hashTokens(run(0, 10), 256), hashTokens(run(0, 11), 256));
    assert.notEqual(hashTokens(new Uint32Array([1 << 30]), 8), hashTokens(new Uint32Array([1 << 31]), 8));
  });
});
