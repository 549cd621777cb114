import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { DisplacementMeter } from '../../../../src/core/policies/e2-plus/displacement.ts';

test('the share is re-requested over evicted tokens inside the window, at most 1, 0 with no eviction', () => {
  const m = new DisplacementMeter(10);
  m.recordReRequest(50, 0);
  assert.equal(m.share(0), 0, 'nothing evicted yet');
  m.recordEviction(0, 200, 1);
  assert.equal(m.share(1), 0.25);
  m.recordReRequest(500, 2);
  assert.equal(m.share(2), 1, 'capped');
  // At 10.5 the re-request at 0 has left; at 11.5 the eviction at 1 too.
  assert.equal(m.share(10.5), 1);
  assert.equal(m.share(11.5), 0);
});

test('an instance churns while its last eviction is inside the window; a removed one forgets it', () => {
  const m = new DisplacementMeter(10);
  assert.equal(m.churns(0, 0), false);
  m.recordEviction(0, 1, 5);
  m.recordEviction(1, 0, 5); // nothing left the cache: no churn
  assert.equal(m.churns(0, 14.9), true);
  assert.equal(m.churns(0, 15), false);
  assert.equal(m.churns(1, 6), false);
  m.forget(0);
  assert.equal(m.churns(0, 6), false);
});

test('a report stamped before the newest event is counted, not refused', () => {
  const m = new DisplacementMeter(10);
  m.recordEviction(0, 100, 5);
  m.recordReRequest(40, 3);
  assert.equal(m.share(5), 0.4);
});

test('property: the share equals the windowed ratio of the events, recomputed from scratch', () => {
  const event = fc.record({
    dt: fc.double({ min: 0, max: 4, noNaN: true }),
    evicted: fc.boolean(),
    tokens: fc.integer({ min: 0, max: 1000 }),
  });
  fc.assert(
    fc.property(fc.array(event, { maxLength: 60 }), (events) => {
      const horizon = 10;
      const m = new DisplacementMeter(horizon);
      const seen: { time: number; evicted: boolean; tokens: number }[] = [];
      let now = 0;
      for (const e of events) {
        now += e.dt;
        if (e.evicted) m.recordEviction(0, e.tokens, now);
        else m.recordReRequest(e.tokens, now);
        seen.push({ time: now, evicted: e.evicted, tokens: e.tokens });
        const live = seen.filter((s) => s.time > now - horizon && s.tokens > 0);
        const ev = live.filter((s) => s.evicted).reduce((a, s) => a + s.tokens, 0);
        const re = live.filter((s) => !s.evicted).reduce((a, s) => a + s.tokens, 0);
        const expected = ev > 0 ? Math.min(1, re / ev) : 0;
        assert.ok(Math.abs(m.share(now) - expected) < 1e-9, `share ${m.share(now)} != ${expected}`);
      }
    }),
    { seed: 35, numRuns: 200 },
  );
});
