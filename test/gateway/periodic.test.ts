import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MIN_REAL_INTERVAL_SECONDS, realInterval } from '../../src/gateway/periodic.ts';

// Ticks and polls are periodic on the policy's clock: with replicas 10x faster than real time, the
// policy's 1-second tick must come every 0.1 real seconds (it came every real second before).
test('policy-clock periods run timeScale times faster in real time, with a floor', () => {
  assert.equal(realInterval(1, 1), 1);
  assert.equal(realInterval(1, 10), 0.1);
  assert.equal(realInterval(0.5, 5), 0.1);
  assert.equal(realInterval(0.5, 1000), MIN_REAL_INTERVAL_SECONDS);
  assert.equal(realInterval(0, 10), 0, 'off stays off');
});
