import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LlumnixPolicy } from '../../../../src/core/policies/llumnix/policy.ts';
import type { InstanceLoadSignal } from '../../../../src/core/types.ts';

const tokens = (n: number) => new Uint32Array(n);
const signal = (running: number, used: number, waiting = 0, queued = 0): InstanceLoadSignal => ({
  running,
  waiting,
  queuedPrefillTokens: queued,
  usedKvTokens: used,
  freeKvTokens: 10_000 - used,
});

function cluster(n: number, options = {}): LlumnixPolicy {
  const p = new LlumnixPolicy(options);
  for (let i = 0; i < n; i++) p.instanceAdded(i, { kvCapacityTokens: 10_000 }, 0);
  return p;
}

describe('llumnix policy', () => {
  it('dispatches to the instance with the most freeness, counting what it sent since the poll', () => {
    const p = cluster(3);
    p.loadSignal(0, signal(4, 6_000), 0);
    p.loadSignal(1, signal(2, 2_000), 0);
    p.loadSignal(2, signal(8, 2_000), 0);
    // Freeness 1000, 4000, 1000.
    assert.equal(p.route({ id: 'a', tokens: tokens(3_000), arrival: 0 }, 0).instance, 1);
    // Instance 1 now: (10000 - 5000) / 3 = 1667, still the freest.
    assert.equal(p.route({ id: 'b', tokens: tokens(3_000), arrival: 0 }, 0).instance, 1);
    // (10000 - 8000) / 4 = 500: now instances 0 and 2 (1000) win, the one with fewer in flight first.
    assert.equal(p.route({ id: 'c', tokens: tokens(100), arrival: 0 }, 0).instance, 0);
  });

  it('pairs the least free source with the most free destination, within maxMigrationsPerTick', () => {
    const p = cluster(4, { maxMigrationsPerTick: 1 });
    for (let i = 0; i < 4; i++) p.loadSignal(i, signal(0, 0), 0);
    for (let i = 0; i < 8; i++) {
      const d = p.route({ id: `r${i}`, tokens: tokens(10 + i), arrival: 0 }, 0);
      p.requestFirstToken(`r${i}`, 0.1);
      assert.equal(d.instance, i % 4, 'equal freeness: fewest in flight, then the lowest id');
    }
    // Freeness: 0 -> 5, 1 -> 10 (both sources), 2 -> 200, 3 -> 1000 (destinations).
    p.loadSignal(0, signal(2, 9_990), 1);
    p.loadSignal(1, signal(2, 9_980), 1);
    p.loadSignal(2, signal(2, 9_600), 1);
    p.loadSignal(3, signal(2, 8_000), 1);
    p.tick(1);
    assert.deepEqual(p.migrations(1), [{ id: 'r0', from: 0, to: 3 }]);
    const q = cluster(4, { maxMigrationsPerTick: 2 });
    for (let i = 0; i < 4; i++) q.loadSignal(i, signal(0, 0), 0);
    for (let i = 0; i < 8; i++) {
      q.route({ id: `r${i}`, tokens: tokens(10 + i), arrival: 0 }, 0);
      q.requestFirstToken(`r${i}`, 0.1);
    }
    q.loadSignal(0, signal(2, 9_990), 1);
    q.loadSignal(1, signal(2, 9_980), 1);
    q.loadSignal(2, signal(2, 9_600), 1);
    q.loadSignal(3, signal(2, 8_000), 1);
    q.tick(1);
    assert.deepEqual(q.migrations(1), [
      { id: 'r0', from: 0, to: 3 },
      { id: 'r1', from: 1, to: 2 },
    ]);
  });

  it('picks decoding requests only, normal priority before high, shortest prompt first; one at a time per source', () => {
    const p = cluster(2, { highPriorityTenants: 'vip' });
    p.loadSignal(0, signal(1, 0), 0);
    p.loadSignal(1, signal(1, 9_000), 0);
    for (const [id, n, tenant] of [
      ['vip-short', 10, 'vip'],
      ['long', 900, undefined],
      ['short', 100, undefined],
      ['waiting', 5, undefined],
    ] as const) {
      const request = { id, tokens: tokens(n), arrival: 0, ...(tenant === undefined ? {} : { tenant }) };
      assert.equal(p.route(request, 0).instance, 0);
    }
    for (const id of ['vip-short', 'long', 'short']) p.requestFirstToken(id, 0.1);
    // Instance 0 becomes the busy one.
    p.loadSignal(0, signal(4, 9_900), 1);
    p.loadSignal(1, signal(1, 100), 1);
    p.tick(1);
    assert.deepEqual(p.migrations(1), [{ id: 'short', from: 0, to: 1 }]);
    assert.deepEqual(p.migrations(1), [], 'taken once');
    p.tick(2);
    assert.deepEqual(p.migrations(2), [], 'one migration at a time per source');
    p.migrationEnded('short', 0, 1, 'done', 2.5);
    assert.deepEqual([p.inflight(0), p.inflight(1)], [3, 1], 'moved to the destination');
    p.tick(3);
    assert.deepEqual(p.migrations(3), [{ id: 'long', from: 0, to: 1 }]);
    p.migrationEnded('long', 0, 1, 'aborted', 3.5);
    assert.deepEqual([p.inflight(0), p.inflight(1)], [3, 1], 'an aborted one stays');
    p.requestFinished('long', 4, { promptTokens: 900, cachedTokens: 0, outputTokens: 5 });
    p.tick(4);
    assert.deepEqual(p.migrations(4), [{ id: 'vip-short', from: 0, to: 1 }]);
  });

  it('gives high-priority requests headroom: their instance looks less free', () => {
    const p = cluster(2, { highPriorityTenants: 'vip', priorityHeadroomTokens: 5_000 });
    p.loadSignal(0, signal(1, 0), 0);
    p.loadSignal(1, signal(1, 0), 0);
    assert.equal(p.route({ id: 'v', tokens: tokens(10), arrival: 0, tenant: 'vip' }, 0).instance, 0);
    assert.ok(p.freeness(0) < p.freeness(1) - 4_000);
    p.requestFinished('v', 1, { promptTokens: 10, cachedTokens: 0, outputTokens: 1 });
    p.loadSignal(0, signal(1, 0), 1);
    assert.equal(p.freeness(0), p.freeness(1));
  });

  it('migrates out of a draining instance', () => {
    const p = cluster(2);
    p.route({ id: 'a', tokens: tokens(10), arrival: 0 }, 0);
    p.requestFirstToken('a', 0.1);
    p.instanceDrained(0, 1);
    p.tick(1);
    assert.deepEqual(p.migrations(1), [{ id: 'a', from: 0, to: 1 }]);
  });

  it('refuses thresholds in the wrong order', () => {
    assert.throws(
      () => new LlumnixPolicy({ migrateOutFreeness: 100, migrateInFreeness: 50 }),
      /migrateInFreeness/,
    );
    assert.throws(() => new LlumnixPolicy({ maxMigrationsPerTick: -1 }), /maxMigrationsPerTick/);
  });
});

describe('llumnix policy where nothing migrates (the gateway)', () => {
  it('drops asks nobody took at the next tick, and frees a source whose request finished mid-migration', () => {
    const p = cluster(2);
    p.loadSignal(0, signal(0, 0), 0);
    p.loadSignal(1, signal(0, 9_000), 0);
    for (const id of ['a', 'b']) {
      assert.equal(p.route({ id, tokens: tokens(id === 'a' ? 10 : 20), arrival: 0 }, 0).instance, 0);
      p.requestFirstToken(id, 0.1);
    }
    p.loadSignal(0, signal(2, 9_990), 1);
    p.loadSignal(1, signal(0, 0), 1);
    p.tick(1);
    p.tick(2);
    assert.deepEqual(p.migrations(2), [{ id: 'a', from: 0, to: 1 }], 'asked again, not piled up');
    p.requestFinished('a', 2.5, { promptTokens: 10, cachedTokens: 0, outputTokens: 1 });
    p.tick(3);
    assert.deepEqual(p.migrations(3), [{ id: 'b', from: 0, to: 1 }], 'the source is free again');
    p.migrationEnded('a', 0, 1, 'aborted', 3.1);
    p.tick(4);
    assert.deepEqual(p.migrations(4), [], "b's migration is still under way");
  });
});
