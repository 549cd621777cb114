import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type DecodeLoad,
  dispatchDecode,
  heavyLightRatio,
  splitByResources,
} from '../../../../src/core/policies/disagg/tetriinfer/dispatch.ts';
import { Random } from '../../../../src/core/random.ts';

const load = (instance: number, demandTokens: number, heavy: number, light: number): DecodeLoad => ({
  instance,
  capacityTokens: 1000,
  demandTokens,
  heavy,
  light,
});

describe('tetriinfer dispatcher (§3.3.4) on hand-made loads', () => {
  const loads = [load(0, 900, 0, 4), load(1, 100, 3, 1), load(2, 200, 1, 3), load(3, 950, 0, 0)];

  it('α holds the instances with room for the predicted need; β the rest, in order', () => {
    const { alpha, beta } = splitByResources(loads, { tokens: 100, heavy: true });
    assert.deepEqual(
      alpha.map((l) => l.instance),
      [0, 1, 2],
    );
    assert.deepEqual(
      beta.map((l) => l.instance),
      [3],
    );
  });

  it('the heavy:light ratio counts the request; no light decode counts as one', () => {
    assert.equal(heavyLightRatio(loads[1]!, { tokens: 1, heavy: true }), 4);
    assert.equal(heavyLightRatio(loads[2]!, { tokens: 1, heavy: false }), 0.25);
    assert.equal(heavyLightRatio(loads[3]!, { tokens: 1, heavy: true }), 1);
  });

  it('power-of-two takes the lower ratio of its two picks from α, never β', () => {
    const need = { tokens: 500, heavy: true }; // α = {1, 2}
    for (let seed = 0; seed < 20; seed++) {
      // Both of α are picked: 2 (ratio 2/3) beats 1 (4/1).
      assert.equal(dispatchDecode(loads, need, 'power-of-two', new Random(seed)), 2);
    }
  });

  it('power-of-two over all instances when α is empty (ours: the paper does not say)', () => {
    const full = [load(0, 1000, 2, 1), load(1, 1000, 0, 5)];
    assert.equal(dispatchDecode(full, { tokens: 10, heavy: true }, 'power-of-two', new Random(1)), 1);
  });

  it('power-of-two: a single candidate in α is taken', () => {
    assert.equal(dispatchDecode(loads, { tokens: 850, heavy: false }, 'power-of-two', new Random(3)), 1);
  });

  it('random spreads over every instance; imbalance sends every heavy decode to the first', () => {
    const seen = new Set<number>();
    const random = new Random(7);
    for (let k = 0; k < 200; k++)
      seen.add(dispatchDecode(loads, { tokens: 10, heavy: false }, 'random', random));
    assert.deepEqual([...seen].sort(), [0, 1, 2, 3]);
    for (let k = 0; k < 20; k++)
      assert.equal(dispatchDecode(loads, { tokens: 10, heavy: true }, 'imbalance', random), 0);
  });
});
