import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { CircuitBreaker } from '../../src/gateway/breaker.ts';
import { TokenBucket } from '../../src/gateway/rate-limit.ts';

test('the breaker opens after the threshold of consecutive failures, half-opens on time, and the probe decides', () => {
  const b = new CircuitBreaker({ failureThreshold: 3, openSeconds: 5 });
  assert.equal(b.failure(0), false);
  assert.equal(b.failure(0), false);
  b.success(); // a success in between resets the count
  assert.equal(b.failure(1), false);
  assert.equal(b.failure(1), false);
  assert.equal(b.failure(1), true);
  assert.equal(b.state(5.9), 'open');
  assert.equal(b.state(6), 'half-open');
  assert.equal(b.failure(6), true, 'a failed probe opens it again at once');
  assert.equal(b.state(10), 'open');
  assert.equal(b.state(11), 'half-open');
  b.success();
  assert.equal(b.state(11), 'closed');
  assert.equal(b.opened, 2);
});

test('breaker property: it is open exactly when the last threshold outcomes since a success were failures within openSeconds', () => {
  fc.assert(
    fc.property(
      fc.array(fc.record({ ok: fc.boolean(), dt: fc.double({ min: 0, max: 3, noNaN: true }) }), {
        maxLength: 40,
      }),
      (events) => {
        const b = new CircuitBreaker({ failureThreshold: 2, openSeconds: 4 });
        let now = 0;
        let openedAt: number | undefined;
        let streak = 0;
        for (const e of events) {
          now += e.dt;
          const expectedOpen = openedAt !== undefined && now - openedAt < 4;
          assert.equal(b.state(now) === 'open', expectedOpen);
          if (e.ok) {
            b.success();
            streak = 0;
            openedAt = undefined;
          } else if (!expectedOpen) {
            streak++;
            const halfOpen = openedAt !== undefined;
            if (halfOpen || streak >= 2) openedAt = now;
            b.failure(now);
          } else b.failure(now);
        }
      },
    ),
  );
});

test('token bucket: a burst at once, then the sustained rate, and the wait until the next token', () => {
  const bucket = new TokenBucket(2, 3, 0);
  assert.equal(bucket.take(0), 0);
  assert.equal(bucket.take(0), 0);
  assert.equal(bucket.take(0), 0);
  assert.equal(bucket.take(0), 0.5);
  assert.equal(bucket.take(0.5), 0);
  assert.ok(Math.abs(bucket.take(0.5) - 0.5) < 1e-9);
});
