import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Random } from '../../src/core/random.ts';
import { analyzePrefixSharing, measureWorkload } from '../../src/workloads/stats.ts';

const prompts = (...lists: number[][]) => lists.map((list) => Uint32Array.from(list));

describe('analyzePrefixSharing on a hand-made set', () => {
  // A and B share 6 tokens, C shares 2 with them, D nothing; E = F; G is a prefix of H.
  const set = prompts(
    [1, 2, 3, 4, 5, 6, 7, 8], // A
    [1, 2, 3, 4, 5, 6, 9], // B
    [1, 2, 10], // C
    [11, 12], // D
    [20, 21, 22], // E
    [20, 21, 22], // F
    [30, 31], // G
    [30, 31, 32, 33, 34], // H
  );
  const sharing = analyzePrefixSharing(set);
  const summary = sharing.map((s) => [s.sharedPrefix, s.keyStart, s.keyEnd, s.requestsSharingKey]);

  it('finds the shared prefix, key portion and its sharers of every prompt', () => {
    assert.deepEqual(summary, [
      // A: nodes (0,2] (2,6] (6,8]; (2,6] has 4 > 2 tokens and is the deepest such: shared by A, B.
      [6, 2, 6, 2],
      [6, 2, 6, 2], // B: same key node.
      // C: nodes (0,2] (2,3]; 1 token is not more than 2, so the key is (0,2], shared by A, B, C.
      [2, 0, 2, 3],
      [0, 0, 2, 1], // D: one node, unshared.
      [3, 0, 3, 2], // E: identical to F.
      [3, 0, 3, 2],
      [2, 0, 2, 2], // G: H passes through all of G.
      [2, 2, 5, 1], // H: (2,5] has 3 > 2 tokens.
    ]);
  });

  it('gives equal key node ids exactly to prompts with the same key portion', () => {
    const ids = sharing.map((s) => s.keyNode);
    assert.equal(ids[0], ids[1]);
    assert.equal(ids[4], ids[5]);
    assert.equal(new Set(ids).size, 6);
  });

  it('summarises per request (mean, population std)', () => {
    const stats = measureWorkload(set.map((tokens, i) => ({ tokens, outputTokens: i + 1 })));
    assert.equal(stats.requests, 8);
    assert.equal(stats.promptLength.mean, (8 + 7 + 3 + 2 + 3 + 3 + 2 + 5) / 8);
    assert.equal(stats.outputLength.mean, 4.5);
    assert.ok(Math.abs(stats.outputLength.std - Math.sqrt(5.25)) < 1e-12);
    const shared = [6 / 8, 6 / 7, 2 / 3, 0, 1, 1, 1, 2 / 5];
    assert.ok(Math.abs(stats.sharedPrefixShare.mean - shared.reduce((a, b) => a + b) / 8) < 1e-12);
    const keys = [4 / 8, 4 / 7, 2 / 3, 1, 1, 1, 1, 3 / 5];
    assert.ok(Math.abs(stats.keyPortionShare.mean - keys.reduce((a, b) => a + b) / 8) < 1e-12);
    assert.equal(stats.requestsSharingKeyPortion.mean, (2 + 2 + 3 + 1 + 2 + 2 + 2 + 1) / 8);
    // Key nodes: {A,B}:2, {A,B,C} seen from C:3, D:1, {E,F}:2, {G,H}:2, H's own:1.
    assert.equal(stats.keyPortions, 6);
    assert.equal(stats.requestsPerKeyPortion.mean, (2 + 3 + 1 + 2 + 2 + 1) / 6);
  });

  it('handles the empty set and empty prompts', () => {
    assert.equal(measureWorkload([]).requests, 0);
    const [empty] = analyzePrefixSharing(prompts([], [], [1]));
    assert.deepEqual([empty!.sharedPrefix, empty!.keyEnd, empty!.requestsSharingKey], [0, 0, 1]);
  });
});

/** The definitions, applied literally: every pair of prompts compared. */
function bruteForce(set: readonly Uint32Array[]) {
  const lcp = (a: Uint32Array, b: Uint32Array) => {
    let i = 0;
    while (i < a.length && i < b.length && a[i] === b[i]) i++;
    return i;
  };
  return set.map((p, i) => {
    const others = set.filter((_, j) => j !== i).map((q) => lcp(p, q));
    const depths = [...new Set([...others.filter((d) => d > 0), p.length])].sort((a, b) => a - b);
    let [keyStart, keyEnd, previous] = [0, p.length, 0];
    for (const d of depths) {
      if (d - previous > previous) [keyStart, keyEnd] = [previous, d];
      previous = d;
    }
    return [Math.max(0, ...others), keyStart, keyEnd, 1 + others.filter((d) => d >= keyEnd).length];
  });
}

describe('analyzePrefixSharing against the pairwise definition', () => {
  it('agrees on random sets with heavy sharing, duplicates and nested prefixes', () => {
    const random = new Random(7);
    for (let round = 0; round < 300; round++) {
      const size = random.int(1, 14);
      const set = Array.from({ length: size }, () =>
        Uint32Array.from({ length: random.int(1, 9) }, () => random.int(0, 2)),
      );
      const fast = analyzePrefixSharing(set).map((s) => [
        s.sharedPrefix,
        s.keyStart,
        s.keyEnd,
        s.requestsSharingKey,
      ]);
      assert.deepEqual(fast, bruteForce(set), `set ${set.map((p) => p.join('')).join(' ')}`);
    }
  });
});
