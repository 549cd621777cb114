import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { type ClusterNode, ClusterTree } from '../../src/core/cluster-tree.ts';

const INSTANCES = 3;
const tokensArb = fc
  .array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 10 })
  .map((a) => Uint32Array.from(a));

type Op =
  | { kind: 'assign'; tokens: Uint32Array; instance: number }
  | { kind: 'finish'; pick: number }
  | { kind: 'expire'; pick: number }
  | { kind: 'evict'; tokens: Uint32Array; instance: number; kept: number }
  | { kind: 'drop'; instance: number };

const instanceArb = fc.integer({ min: 0, max: INSTANCES - 1 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({ kind: fc.constant('assign' as const), tokens: tokensArb, instance: instanceArb }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('finish' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('expire' as const), pick: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('evict' as const),
      tokens: tokensArb,
      instance: instanceArb,
      kept: fc.nat(9),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('drop' as const), instance: instanceArb }) },
);

const key = (t: Uint32Array | number[], n: number) => Array.from(t.slice(0, n)).join(',');

/** The naive model: each instance's cache as the set of all cached token prefixes. */
class Reference {
  cached: Set<string>[] = Array.from({ length: INSTANCES }, () => new Set());
  refs: {
    tokens: Uint32Array;
    instance: number;
    leaf: ClusterNode | null;
    inflight: boolean;
    window: boolean;
  }[] = [];

  cacheAll(tokens: Uint32Array, instance: number): void {
    for (let n = 1; n <= tokens.length; n++) this.cached[instance]!.add(key(tokens, n));
  }

  /** A reported eviction: what an in-flight request on the instance goes through stays (it will be re-cached). */
  evict(tokens: Uint32Array, instance: number, kept: number): void {
    const head = key(tokens, kept + 1);
    const held = new Set<string>();
    for (const r of this.refs)
      if (r.inflight && r.instance === instance)
        for (let n = 1; n <= r.tokens.length; n++) held.add(key(r.tokens, n));
    for (const k of [...this.cached[instance]!])
      if ((k === head || k.startsWith(`${head},`)) && !held.has(k)) this.cached[instance]!.delete(k);
  }

  cachedLength(query: Uint32Array, instance: number): number {
    let best = 0;
    for (let n = 1; n <= query.length; n++) if (this.cached[instance]!.has(key(query, n))) best = n;
    return best;
  }

  /** Longest prefix of the query present in anything the tree must still remember. */
  retained(query: Uint32Array): number {
    let best = 0;
    for (const r of this.refs) if (r.inflight || r.window) best = Math.max(best, lcp(r.tokens, query));
    for (let i = 0; i < INSTANCES; i++) best = Math.max(best, this.cachedLength(query, i));
    return best;
  }
}

function lcp(a: Uint32Array, b: Uint32Array): number {
  let k = 0;
  while (k < a.length && k < b.length && a[k] === b[k]) k++;
  return k;
}

test('cluster tree agrees with a naive reference on random assign / finish / expire / evict / drop sequences', () => {
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 60 }), fc.array(tokensArb, { maxLength: 6 }), (ops, queries) => {
      const tree = new ClusterTree();
      for (let i = 0; i < INSTANCES; i++) tree.addInstance(i, Number.POSITIVE_INFINITY);
      const ref = new Reference();
      let now = 0;
      for (const op of ops) {
        now += 1;
        if (op.kind === 'assign') {
          const leaf = tree.assign(op.tokens, op.instance, now);
          ref.cacheAll(op.tokens, op.instance);
          ref.refs.push({ tokens: op.tokens, instance: op.instance, leaf, inflight: true, window: true });
        } else if (op.kind === 'finish') {
          const live = ref.refs.filter((r) => r.inflight);
          if (live.length === 0) continue;
          const r = live[op.pick % live.length]!;
          tree.releaseInflight(r.leaf, r.instance);
          r.inflight = false;
        } else if (op.kind === 'expire') {
          const live = ref.refs.filter((r) => r.window);
          if (live.length === 0) continue;
          const r = live[op.pick % live.length]!;
          tree.releaseWindow(r.leaf, r.instance);
          r.window = false;
        } else if (op.kind === 'evict') {
          const kept = op.kept % op.tokens.length;
          // Evicted now: no request was routed since, only in-flight pins hold nodes.
          tree.evictReported(op.instance, op.tokens, kept, now);
          ref.evict(op.tokens, op.instance, kept);
        } else {
          tree.removeInstanceCache(op.instance);
          ref.cached[op.instance]!.clear();
        }
        tree.checkInvariants();
        for (const q of [...queries, ...ref.refs.map((r) => r.tokens)]) {
          const m = tree.match(q);
          assert.equal(m.matched, ref.retained(q), 'the tree keeps exactly what is cached or referenced');
          let best = 0;
          for (let i = 0; i < INSTANCES; i++) {
            const expected = ref.cachedLength(q, i);
            assert.equal(tree.cachedOn(i), expected, `cached prefix on instance ${i}`);
            best = Math.max(best, expected);
          }
          assert.equal(m.bestCached, best);
          for (const i of m.bestInstances) assert.equal(ref.cachedLength(q, i), best);
        }
      }
      // Once every reference ends and every cache is dropped, nothing is left.
      for (const r of ref.refs) {
        if (r.inflight) tree.releaseInflight(r.leaf, r.instance);
        if (r.window) tree.releaseWindow(r.leaf, r.instance);
      }
      for (let i = 0; i < INSTANCES; i++) tree.removeInstanceCache(i);
      assert.equal(tree.nodeCount, 0);
    }),
    { numRuns: 300 },
  );
});

test('predicted eviction keeps usage within capacity, evicting least recently used unpinned tokens first', () => {
  fc.assert(
    fc.property(
      fc.array(tokensArb, { minLength: 1, maxLength: 40 }),
      fc.integer({ min: 4, max: 30 }),
      (prompts, capacity) => {
        const tree = new ClusterTree();
        tree.addInstance(0, capacity);
        const pinned: (ClusterNode | null)[] = [];
        prompts.forEach((p, n) => {
          const leaf = tree.assign(p, 0, n);
          // Keep only the latest request in flight, as if the earlier ones finished.
          for (const l of pinned.splice(0)) tree.releaseInflight(l, 0);
          pinned.push(leaf);
          tree.evictToCapacity(0);
          tree.checkInvariants();
          const used = tree.usedTokens(0);
          assert.ok(
            used <= Math.max(capacity, p.length),
            `used ${used} within capacity ${capacity} (or the pinned prompt)`,
          );
          // The request just routed is still fully cached: it is pinned.
          tree.match(p);
          assert.equal(tree.cachedOn(0), p.length);
        });
      },
    ),
  );
});

test('eviction cost walks the LRU list from the oldest and skips the request path and pinned nodes', () => {
  const tree = new ClusterTree();
  tree.addInstance(0, 10);
  const a = tree.assign(Uint32Array.from([1, 1, 1, 1]), 0, 1);
  tree.releaseInflight(a, 0);
  const b = tree.assign(Uint32Array.from([2, 2, 2]), 0, 2);
  tree.releaseInflight(b, 0);
  tree.assign(Uint32Array.from([3, 3, 3]), 0, 3); // stays in flight: pinned
  assert.equal(tree.usedTokens(0), 10);
  const victims: number[][] = [];
  const m = tree.match(Uint32Array.from([2, 2, 2, 5, 5]));
  const mark = tree.markPath(m.path);
  tree.evictionCost(0, 5, mark, (node, tokens) => {
    victims.push([node.tokens[0]!, tokens]);
    return tokens;
  });
  // Needs 5 tokens: [1,1,1,1] (4, oldest), then [2,2,2] is on the path and [3,3,3] is pinned.
  assert.deepEqual(victims, [[1, 4]]);
});

test('stale eviction reports (evicted before later routings) keep the tree consistent', () => {
  fc.assert(
    fc.property(
      fc.array(fc.tuple(opArb, fc.nat(4)), { maxLength: 60 }),
      fc.array(tokensArb, { maxLength: 4 }),
      (ops, queries) => {
        const tree = new ClusterTree();
        for (let i = 0; i < INSTANCES; i++) tree.addInstance(i, Number.POSITIVE_INFINITY);
        const refs: {
          leaf: ClusterNode | null;
          instance: number;
          tokens: Uint32Array;
          at: number;
          dropped: boolean;
        }[] = [];
        const live: typeof refs = [];
        let now = 0;
        let evictedAt = 0;
        for (const [op, age] of ops) {
          now += 1;
          if (op.kind === 'assign') {
            const leaf = tree.assign(op.tokens, op.instance, now, false);
            const ref = { leaf, instance: op.instance, tokens: op.tokens, at: now, dropped: false };
            refs.push(ref);
            live.push(ref);
          } else if (op.kind === 'finish' || op.kind === 'expire') {
            if (live.length === 0) continue;
            const [r] = live.splice(op.pick % live.length, 1);
            tree.releaseInflight(r!.leaf, r!.instance);
          } else if (op.kind === 'evict') {
            // Reports come in the order the engine evicted, each possibly late.
            evictedAt = Math.max(evictedAt, now - age);
            tree.evictReported(op.instance, op.tokens, op.kept % op.tokens.length, evictedAt);
            // A prompt routed after the eviction, or still in flight, keeps its whole path cached.
            for (const r of refs) {
              if (r.instance !== op.instance || r.dropped || (r.at <= evictedAt && !live.includes(r)))
                continue;
              tree.match(r.tokens);
              assert.equal(tree.cachedOn(r.instance), r.tokens.length, 'a held prompt stays cached');
            }
          } else {
            tree.removeInstanceCache(op.instance);
            // The instance forgot its cache (it failed): nothing routed before holds anything there.
            for (const r of refs) if (r.instance === op.instance) r.dropped = true;
          }
          tree.checkInvariants();
          for (const q of queries) tree.match(q);
        }
      },
    ),
    { numRuns: 300 },
  );
});
