import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Admission, AdmissionRefused } from '../../src/gateway/admission.ts';

test('admission grants up to the limit, queues FIFO up to the queue bound, and refuses the rest at once', async () => {
  const admission = new Admission({ maxConcurrent: 2, maxQueue: 1, queueTimeoutSeconds: 60 }, () => 0);
  const a = await admission.acquire();
  const b = await admission.acquire();
  const order: string[] = [];
  const c = admission.acquire().then((release) => {
    order.push('c');
    return release;
  });
  await assert.rejects(
    admission.acquire(),
    (e: unknown) => e instanceof AdmissionRefused && e.reason === 'queue_full' && e.retryAfterSeconds >= 1,
  );
  assert.equal(admission.queued, 1);
  a();
  a(); // releasing twice frees one slot only
  const releaseC = await c;
  assert.deepEqual(order, ['c']);
  assert.equal(admission.inFlight, 2);
  b();
  releaseC();
  assert.equal(admission.inFlight, 0);
});

test('a queued request leaves the queue when its client goes away, and when it waits too long', async () => {
  const admission = new Admission({ maxConcurrent: 1, maxQueue: 5, queueTimeoutSeconds: 0.01 }, () => 0);
  const held = await admission.acquire();
  const gone = new AbortController();
  const waiting = admission.acquire(gone.signal);
  gone.abort(new Error('client left'));
  await assert.rejects(waiting, /client left/);
  await assert.rejects(
    admission.acquire(),
    (e: unknown) => e instanceof AdmissionRefused && e.reason === 'queue_timeout',
  );
  assert.equal(admission.queued, 0);
  held();
  assert.equal(admission.inFlight, 0);
  const shutdown = new Admission({ maxConcurrent: 1, maxQueue: 5, queueTimeoutSeconds: 60 }, () => 0);
  const h = await shutdown.acquire();
  const w = shutdown.acquire();
  shutdown.refuseWaiting(new Error('shutting down'));
  await assert.rejects(w, /shutting down/);
  h();
});
