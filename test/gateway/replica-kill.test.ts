import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type PrebleProcess, startPreble } from '../../src/bench/preble-process.ts';
import { SseSplitter } from '../../src/text/sse.ts';
import { gatewayMetric, MODEL, setFaults, startGateway } from './helpers.ts';

const processes: PrebleProcess[] = [];
after(async () => {
  for (const p of processes) await p.stop('SIGKILL');
});
async function engineProcess(port = 0): Promise<PrebleProcess> {
  // Time runs at 4x: a request's prefill and its 60 tokens take a good fraction of a second.
  const p = await startPreble(['engine', '--port', String(port), '--time-scale', '4', '--fault-admin']);
  processes.push(p);
  return p;
}

interface Outcome {
  readonly status: number;
  readonly replica: string | null;
  readonly chunks: number;
  readonly done: boolean;
  readonly error: boolean;
}

/** One streamed completion, read to the end: how it ended, never how long it took. */
async function stream(
  url: string,
  prompt: string,
  maxTokens: number,
  onFirstChunk?: (replica: string | null) => void,
): Promise<Outcome> {
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, prompt, max_tokens: maxTokens, stream: true }),
  });
  let chunks = 0;
  let done = false;
  let error = false;
  const events = new SseSplitter();
  for await (const part of res.body ?? []) {
    for (const { data } of events.push(Buffer.from(part))) {
      if (data === '[DONE]') done = true;
      else if (data.includes('"error"')) error = true;
      else if (chunks++ === 0) onFirstChunk?.(res.headers.get('x-preble-replica'));
    }
  }
  return { status: res.status, replica: res.headers.get('x-preble-replica'), chunks, done, error };
}

test('a replica killed mid-run: unstarted requests are retried and succeed, started streams end with an error event, it is marked down, re-admitted after restart, and every count returns to zero', async () => {
  const a = await engineProcess();
  const b = await engineProcess();
  const { gateway, url, policyInflight } = await startGateway([a.url, b.url], {
    health: { intervalSeconds: 0.1, timeoutSeconds: 0.5, unhealthyAfter: 1 },
    breaker: { failureThreshold: 1, openSeconds: 0.3 },
    retries: { attempts: 3, backoffSeconds: 0.01 },
  });
  try {
    // Many long streams at once, round robin: half on each replica.
    let startedOnA = 0;
    let streamingOnA = 0;
    const firstWave = Array.from({ length: 12 }, (_, i) =>
      stream(url, `${'shared system prompt '.repeat(40)} question ${i}`, 400, (replica) => {
        if (replica === a.url) streamingOnA++;
      }),
    );
    for (let i = 0; i < 4000 && streamingOnA === 0; i++) await sleep(2);
    assert.ok(streamingOnA > 0, 'a stream from A had begun');
    // From now on A holds new requests before answering: those are certainly not started.
    await setFaults(a.url, { firstByteDelay: 60 });
    const secondWave = Array.from({ length: 8 }, (_, i) => stream(url, `held by A ${i}`, 20));
    for (let i = 0; i < 4000 && (await setFaults(a.url, {})).active === 0; i++) await sleep(2);
    const port = Number(new URL(a.url).port);
    await a.stop('SIGKILL');
    // Requests that arrive after the kill: none may fail.
    const thirdWave = Array.from({ length: 8 }, (_, i) => stream(url, `after the kill ${i}`, 20));
    const first = await Promise.all(firstWave);
    const second = await Promise.all(secondWave);
    const third = await Promise.all(thirdWave);
    for (const o of [...first, ...second, ...third]) {
      assert.equal(o.status, 200);
      assert.ok(
        o.done !== o.error,
        `a stream either completes or ends with an error event: ${JSON.stringify(o)}`,
      );
      if (o.error) {
        assert.equal(o.replica, a.url, 'only streams already under way on the killed replica may fail');
        startedOnA++;
      }
    }
    assert.ok(startedOnA >= 1, 'some streams were under way on the killed replica');
    for (const o of [...second, ...third])
      assert.ok(o.done, 'requests not started at the kill, or sent after it, all succeed');
    assert.ok(
      (await gatewayMetric(gateway, 'preble_retries_total')) >= 1,
      'unstarted requests were retried elsewhere',
    );
    assert.equal(gateway.replicas.get(0)!.view, 'gone', 'the killed replica is marked down');

    // Restart it on the same port: health checks re-admit it once its breaker half-opens.
    const restarted = await engineProcess(port);
    assert.equal(restarted.url, a.url);
    for (let i = 0; i < 500 && gateway.replicas.get(0)!.view !== 'active'; i++) await sleep(10);
    assert.equal(gateway.replicas.get(0)!.view, 'active', 're-admitted when healthy again');
    const after = await Promise.all(Array.from({ length: 4 }, (_, i) => stream(url, `back again ${i}`, 20)));
    assert.ok(after.every((o) => o.done));
    assert.ok(
      after.some((o) => o.replica === a.url),
      'the restarted replica takes traffic',
    );

    assert.equal(await gatewayMetric(gateway, 'preble_replica_inflight_requests'), 0);
    assert.equal(gateway.active, 0);
    assert.equal(policyInflight(), 0, "the policy's in-flight count is back to zero");
    assert.deepEqual(
      gateway.replicas.all().map((r) => r.inflight),
      [0, 0],
    );
  } finally {
    await gateway.close();
  }
});
