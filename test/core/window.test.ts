import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { SlidingWindow } from '../../src/core/window.ts';

test('expire drops exactly the entries older than the horizon, oldest first', () => {
  fc.assert(
    fc.property(
      fc.array(fc.double({ min: 0, max: 5, noNaN: true }), { maxLength: 200 }),
      fc.double({ min: 0.5, max: 20, noNaN: true }),
      (gaps, horizon) => {
        const w = new SlidingWindow<{ time: number; n: number }>(horizon, 4);
        const live: { time: number; n: number }[] = [];
        let t = 0;
        let n = 0;
        for (const g of gaps) {
          t += g;
          const e = { time: t, n: n++ };
          w.push(e);
          live.push(e);
          const dropped: number[] = [];
          w.expire(t, (x) => dropped.push(x.n));
          const expected = live.filter((x) => x.time <= t - horizon).map((x) => x.n);
          assert.deepEqual(dropped, expected);
          live.splice(0, expected.length);
          assert.equal(w.size, live.length);
          assert.deepEqual(
            [...w.entries()].map((x) => x.n),
            live.map((x) => x.n),
          );
        }
      },
    ),
  );
});

test('timeFrom: now, or the newest entry time when the clock stepped back', () => {
  const w = new SlidingWindow<{ time: number }>(1);
  assert.equal(w.timeFrom(3), 3, 'empty');
  w.push({ time: 5 });
  assert.equal(w.timeFrom(3), 5);
  assert.equal(w.timeFrom(7), 7);
  w.push({ time: w.timeFrom(4) });
});

test('entries must come in time order and the horizon must be positive', () => {
  const w = new SlidingWindow<{ time: number }>(1);
  w.push({ time: 2 });
  assert.throws(() => w.push({ time: 1 }), /time order/);
  assert.throws(() => new SlidingWindow(0), /positive/);
});
