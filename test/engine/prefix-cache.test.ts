import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { type CacheNode, type MatchCursor, PrefixCache } from '../../src/engine/prefix-cache.ts';
import type { EngineEviction } from '../../src/engine/types.ts';

const t = (...ids: number[]) => Uint32Array.from(ids);

/** Cache `tokens` as one request would: match, pin the match, extend to the end. Returns the pin. */
function hold(cache: PrefixCache, tokens: Uint32Array): CacheNode {
  const cursor = cache.newCursor();
  cache.match(cursor, tokens);
  const pin = cache.pinMatch(cursor);
  return cache.extend(pin, tokens, tokens.length);
}

function refsOf(pins: readonly CacheNode[], cache: PrefixCache): Map<CacheNode, number> {
  const refs = new Map<CacheNode, number>();
  for (const pin of pins)
    for (let n = pin; n !== cache.root; n = n.parent!) refs.set(n, (refs.get(n) ?? 0) + 1);
  return refs;
}

describe('PrefixCache', () => {
  it('pins a partial match exactly, splitting the node', () => {
    const cache = new PrefixCache();
    const a = hold(cache, t(1, 2, 3, 4, 5, 6));
    const cursor = cache.newCursor();
    assert.equal(cache.match(cursor, t(1, 2, 3, 9)), 3);
    const pin = cache.pinMatch(cursor);
    assert.deepEqual([pin.prefixLen, pin.endLen], [0, 3]);
    assert.equal(pin.data.refs, 2); // a's pin and this one
    assert.equal(a.data.refs, 1);
    assert.equal(cache.tokens, 6);
    cache.check(refsOf([a, pin], cache));
  });

  it('extend shares what is already cached and adds the rest', () => {
    const cache = new PrefixCache();
    const a = hold(cache, t(1, 2, 3, 4));
    const b = hold(cache, t(1, 2, 7, 8, 9));
    assert.equal(cache.lastAdded, 3);
    assert.equal(cache.tokens, 7);
    cache.check(refsOf([a, b], cache));
    cache.unpin(a);
    cache.unpin(b);
    assert.equal(cache.evictableTokens, 7);
    cache.check(new Map());
  });

  it('evicts least recently released leaves first, the last one in part, in coalesced events', () => {
    const cache = new PrefixCache();
    const a = hold(cache, t(1, 2, 3, 4));
    const b = hold(cache, t(5, 6, 7));
    cache.now = 1;
    cache.unpin(a);
    cache.now = 2;
    cache.unpin(b);
    const out: EngineEviction[] = [];
    assert.equal(cache.evict(2, out), 2);
    assert.deepEqual(out, [{ path: t(1, 2, 3, 4), keptTokens: 2 }]);
    out.length = 0;
    assert.equal(cache.evict(4, out), 4);
    assert.deepEqual(out, [
      { path: t(1, 2), keptTokens: 0 },
      { path: t(5, 6, 7), keptTokens: 1 },
    ]);
    assert.equal(cache.tokens, 1);
    cache.check(new Map());
  });

  it('evicts a child before its parent and reports them as one event', () => {
    const cache = new PrefixCache();
    const parent = hold(cache, t(1, 2, 3));
    const child = cache.extend(parent, t(1, 2, 3, 4, 5), 5);
    cache.unpin(child);
    const out: EngineEviction[] = [];
    cache.evict(5, out);
    assert.deepEqual(out, [{ path: t(1, 2, 3, 4, 5), keptTokens: 0 }]);
  });

  it('resumed matches equal fresh matches through inserts, splits, evictions and releases', () => {
    const tokensArb = fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 10 });
    const opArb = fc.oneof(
      fc.record({ kind: fc.constant('hold' as const), tokens: tokensArb }),
      fc.record({ kind: fc.constant('release' as const), which: fc.nat() }),
      fc.record({ kind: fc.constant('evict' as const), tokens: fc.integer({ min: 1, max: 12 }) }),
      fc.record({ kind: fc.constant('query' as const), which: fc.nat(), tokens: tokensArb }),
    );
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 60 }), (ops) => {
        const cache = new PrefixCache();
        const pins: CacheNode[] = [];
        const cursors: { cursor: MatchCursor; seq: Uint32Array }[] = [];
        let time = 0;
        for (const op of ops) {
          cache.now = time++;
          if (op.kind === 'hold') {
            pins.push(hold(cache, Uint32Array.from(op.tokens)));
          } else if (op.kind === 'release' && pins.length > 0) {
            cache.unpin(pins.splice(op.which % pins.length, 1)[0]!);
          } else if (op.kind === 'evict') {
            const before = cache.evictableTokens;
            const out: EngineEviction[] = [];
            const evicted = cache.evict(op.tokens, out);
            assert.ok(evicted <= before);
            assert.ok(evicted >= Math.min(op.tokens, before));
            for (const e of out) assert.ok(e.keptTokens < e.path.length);
          } else if (op.kind === 'query') {
            // Re-query an old cursor (resume) or start a new one.
            if (cursors.length > 0 && op.which % 2 === 0) {
              const c = cursors[op.which % cursors.length]!;
              assert.equal(cache.match(c.cursor, c.seq), cache.tree.match(c.seq).matched);
            } else {
              const c = { cursor: cache.newCursor(), seq: Uint32Array.from(op.tokens) };
              assert.equal(cache.match(c.cursor, c.seq), cache.tree.match(c.seq).matched);
              cursors.push(c);
            }
          }
          cache.check(refsOf(pins, cache));
          for (const c of cursors)
            assert.equal(cache.match(c.cursor, c.seq), cache.tree.match(c.seq).matched);
        }
      }),
      { numRuns: 400 },
    );
  });
});
