import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FlipWatcher, type WatchedInstance } from '../../../../src/core/policies/disagg/tetriinfer/flip.ts';

const w = (instance: number, role: 'prefill' | 'decode', inflight: number): WatchedInstance => ({
  instance,
  role,
  inflight,
});

describe('tetriinfer flip watcher (§3.5)', () => {
  it('flips an instance idle for idleSeconds while the other pool is busy, after the flip delay', () => {
    const watcher = new FlipWatcher(60, 0.006);
    const fleet = (p1: number) => [w(0, 'prefill', 2), w(1, 'prefill', p1), w(2, 'decode', 5)];
    assert.deepEqual(watcher.observe(0, fleet(0)), []);
    assert.deepEqual(watcher.observe(59, fleet(0)), []);
    assert.equal(watcher.isFlipping(1), false);
    assert.deepEqual(watcher.observe(60, fleet(0)), []); // decided: no new work from now on
    assert.equal(watcher.isFlipping(1), true);
    assert.deepEqual(watcher.observe(60.005, fleet(0)), []);
    assert.deepEqual(watcher.observe(60.006, fleet(0)), [{ action: 'role', instance: 1, role: 'decode' }]);
    assert.equal(watcher.isFlipping(1), false);
  });

  it('busy work resets the idle clock', () => {
    const watcher = new FlipWatcher(60, 0);
    watcher.observe(0, [w(0, 'prefill', 1), w(1, 'prefill', 0), w(2, 'decode', 1)]);
    watcher.observe(30, [w(0, 'prefill', 1), w(1, 'prefill', 1), w(2, 'decode', 1)]);
    watcher.observe(80, [w(0, 'prefill', 1), w(1, 'prefill', 0), w(2, 'decode', 1)]);
    assert.equal(watcher.isFlipping(1), false);
  });

  it('never flips the last of a role, nor toward an idle pool; idleSeconds 0 never flips', () => {
    const lone = new FlipWatcher(1, 0);
    lone.observe(0, [w(0, 'prefill', 0), w(1, 'decode', 3), w(2, 'decode', 3)]);
    lone.observe(5, [w(0, 'prefill', 0), w(1, 'decode', 3), w(2, 'decode', 3)]);
    assert.equal(lone.isFlipping(0), false);
    const idleOther = new FlipWatcher(1, 0);
    idleOther.observe(0, [w(0, 'prefill', 0), w(1, 'prefill', 1), w(2, 'decode', 0)]);
    idleOther.observe(5, [w(0, 'prefill', 0), w(1, 'prefill', 1), w(2, 'decode', 0)]);
    assert.equal(idleOther.isFlipping(0), false);
    const off = new FlipWatcher(0, 0);
    assert.deepEqual(off.observe(1e9, [w(0, 'prefill', 0), w(1, 'prefill', 0), w(2, 'decode', 1)]), []);
  });
});
