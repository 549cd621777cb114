import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { RadixTree } from '../../src/core/radix-tree.ts';

const noData = { create: () => undefined, split: () => {} };

function lcp(a: Uint32Array, b: Uint32Array): number {
  let k = 0;
  while (k < a.length && k < b.length && a[k] === b[k]) k++;
  return k;
}

/** Small alphabet and lengths so that sequences share prefixes often. */
const tokensArb = fc
  .array(fc.integer({ min: 0, max: 3 }), { minLength: 0, maxLength: 12 })
  .map((a) => Uint32Array.from(a));

test('match finds the longest common prefix with anything inserted (against a naive reference)', () => {
  fc.assert(
    fc.property(
      fc.array(tokensArb, { maxLength: 30 }),
      fc.array(tokensArb, { maxLength: 10 }),
      (inserted, queries) => {
        const tree = new RadixTree<undefined>(noData);
        for (const s of inserted) {
          const path = tree.insert(s);
          const last = path[path.length - 1];
          assert.equal(
            last === undefined ? 0 : last.endLen,
            s.length,
            'insert ends a path exactly at the sequence end',
          );
        }
        for (const q of [...queries, ...inserted]) {
          const expected = inserted.reduce((best, s) => Math.max(best, lcp(s, q)), 0);
          assert.equal(tree.match(q).matched, expected);
        }
      },
    ),
  );
});

test('the tree is compact: every node boundary is a branch point, an insert end, or the root', () => {
  fc.assert(
    fc.property(fc.array(tokensArb, { maxLength: 30 }), (inserted) => {
      const tree = new RadixTree<undefined>(noData);
      const ends = new Set<string>();
      for (const s of inserted) {
        tree.insert(s);
        ends.add(Array.from(s).join(','));
      }
      for (const n of tree.nodesDepthFirst()) {
        assert.ok(n.length > 0, 'no empty nodes');
        assert.equal(n.prefixLen, n.parent!.endLen, 'prefix lengths chain');
        if (n.childCount === 1) {
          // A single-child node must end where some inserted sequence ends.
          const path: number[] = [];
          for (let x: typeof n | null = n; x !== null && x.parent !== null; x = x.parent)
            path.unshift(...x.tokens);
          assert.ok(ends.has(path.join(',')), 'single-child node ends an inserted sequence');
        }
      }
    }),
  );
});

test('split keeps the original node as the tail so references to deeper nodes survive', () => {
  const tree = new RadixTree<undefined>(noData);
  const [leaf] = tree.insert(Uint32Array.from([1, 2, 3, 4]));
  tree.insert(Uint32Array.from([1, 2, 9]));
  assert.deepEqual(Array.from(leaf!.tokens), [3, 4]);
  assert.equal(leaf!.prefixLen, 2);
  assert.deepEqual(Array.from(leaf!.parent!.tokens), [1, 2]);
  assert.equal(tree.size, 3);
});

test('removeLeaf refuses inner nodes and the root', () => {
  const tree = new RadixTree<undefined>(noData);
  tree.insert(Uint32Array.from([1, 2, 3]));
  const path = tree.insert(Uint32Array.from([1, 2, 4]));
  assert.throws(() => tree.removeLeaf(path[0]!), /children/);
  assert.throws(() => tree.removeLeaf(tree.root), /root/);
  tree.removeLeaf(path[1]!);
  assert.equal(tree.match(Uint32Array.from([1, 2, 4])).matched, 2);
});
