import assert from 'node:assert/strict';
import { test } from 'node:test';
import { comparePaired, steadyLatency } from '../../src/experiments/paired-comparison.ts';
import { pairedRatioInterval } from '../../src/experiments/paired-interval.ts';
import type { SimRecord } from '../../src/sim/record.ts';

const run = (latency: readonly number[], ids = latency.map((_, i) => `r${i}`)) => ({
  ids,
  latency: Float64Array.from(latency),
});
const spread = Array.from({ length: 300 }, (_, i) => 1 + ((i * 37) % 101) / 10);

test('comparePaired: the other policy over the baseline, paired by request id whatever the order', () => {
  const base = run(spread);
  // The other run lists the same requests backwards, each twice as slow, plus one the baseline lacks.
  const ids = [...base.ids].reverse();
  const other = run([...spread.map((x) => 2 * x).reverse(), 99], [...ids, 'extra']);
  const c = comparePaired(base, other, { resamples: 200 })!;
  assert.equal(c.n, 300);
  for (const s of [c.mean, c.p99]) {
    assert.ok(Math.abs(s.ratio - 2) < 1e-12 && Math.abs(s.lo - 2) < 1e-12 && Math.abs(s.hi - 2) < 1e-12);
    assert.equal(s.standing, 'ahead');
    assert.equal(s.firm, true);
  }
  for (const q of [c.p50, c.p90, c.p95]) assert.ok(Math.abs(q - 2) < 1e-12, `${q}`);
  const back = comparePaired(other, base, { resamples: 200 })!;
  assert.equal(back.mean.standing, 'behind');
  assert.equal(back.mean.firm, true);
});

test('comparePaired: within 2% is even; a p99 resting on two requests is behind but not firmly; no pairs, no comparison', () => {
  const base = run(spread);
  const same = comparePaired(base, run(spread.map((x) => 1.01 * x)), { resamples: 200 })!;
  assert.equal(same.mean.standing, 'even');
  assert.equal(same.mean.firm, false);
  // Of 400 requests the p99 is the fifth slowest: the baseline's five slowest take 20% longer than
  // the other policy's, so its p99 is behind, on five requests of 400.
  const steps = Array.from({ length: 400 }, (_, i) => 1 + i / 100);
  const tail = run(steps.map((x, i) => (i >= 395 ? 1.2 * x : x)));
  const c = comparePaired(tail, run(steps))!;
  assert.ok(Math.abs(c.p99.ratio - 1 / 1.2) < 1e-12, `${c.p99.ratio}`);
  // Below the tail the two are the same requests: the quantiles show where they cross.
  assert.deepEqual([c.p50, c.p90, c.p95], [1, 1, 1]);
  assert.equal(c.p99.standing, 'behind');
  assert.equal(c.p99.firm, false, `${c.p99.lo}-${c.p99.hi}`);
  assert.equal(comparePaired(base, run([1], ['nobody'])), undefined);
});

test('steadyLatency keeps completed requests that arrived after the warm-up', () => {
  const record = (id: string, arrival: number, finish: number) =>
    ({ id, arrival, firstToken: finish < 0 ? -1 : arrival, finish }) as SimRecord;
  const s = steadyLatency([record('a', 0, 5), record('b', 10, 12), record('c', 11, -1)], 5);
  assert.deepEqual(s.ids, ['b']);
  assert.deepEqual([...s.latency], [2]);
});

test("comparePaired's intervals are the grid's: pairedRatioInterval(other, baseline) over the baseline's ids in its order", () => {
  // Shuffled ids on the other side: the pairs follow the baseline's order, as the grid paired them.
  const base = run(spread.map((x, i) => x + (i % 7) / 10));
  const order = spread.map((_, i) => (i * 97) % spread.length);
  const other = run(
    order.map((i) => 1.05 * spread[i]! + (i % 3) / 10),
    order.map((i) => `r${i}`),
  );
  const c = comparePaired(base, other)!;
  const a = Float64Array.from(base.ids, (_, i) => 1.05 * spread[i]! + (i % 3) / 10);
  for (const [stat, statistic] of [
    ['mean', 'mean'],
    ['p99', 0.99],
  ] as const) {
    const { lo, hi } = pairedRatioInterval(a, base.latency, statistic, { level: 0.95, resamples: 1000 });
    assert.equal(c[stat].lo, lo, stat);
    assert.equal(c[stat].hi, hi, stat);
  }
});
