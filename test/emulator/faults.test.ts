import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createEngineServer } from '../../src/emulator/server.ts';
import { FILLER } from '../../src/emulator/text.ts';
import { MODEL, metricValue, postJson, type Running, startServer, waitFor } from './helpers.ts';

const completion = (extra: object = {}) => ({ model: MODEL, prompt: 'fault test', max_tokens: 3, ...extra });

function post(url: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: signal ?? null,
  });
}

async function statuses(s: Running, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await postJson(`${s.url}/v1/completions`, completion())).status);
  return out;
}

/** Reads an SSE body event by event; `pending` starts a read without awaiting it. */
function sse(res: Response) {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  return {
    async next(): Promise<string | null> {
      for (;;) {
        const end = buffer.indexOf('\n\n');
        if (end >= 0) {
          const event = buffer.slice(0, end).replace(/^data: /, '');
          buffer = buffer.slice(end + 2);
          return event;
        }
        const { done, value } = await reader.read();
        if (done) return null;
        buffer += decoder.decode(value, { stream: true });
      }
    },
    /** Whether anything arrives from now on (settles only on data, end or error). */
    pending(): { readonly arrived: boolean } {
      const state = { arrived: false };
      reader.read().then(
        () => {
          state.arrived = true;
        },
        () => undefined,
      );
      return state;
    },
  };
}

async function withServer(options: Parameters<typeof startServer>[0], run: (s: Running) => Promise<void>) {
  const s = await startServer(options);
  try {
    await run(s);
  } finally {
    await s.close();
  }
}

describe('preble engine: fault injection', () => {
  it('fails requests at --fail-rate with an OpenAI error, the same ones for the same seed', async () => {
    const runs: number[][] = [];
    for (const seed of [7, 7, 8]) {
      await withServer({ seed, faults: { failRate: 0.5 } }, async (s) => {
        const seq = await statuses(s, 24);
        runs.push(seq);
        const ok = seq.filter((x) => x === 200).length;
        // Failed requests never reach the engine.
        const text = await (await fetch(`${s.url}/metrics`)).text();
        assert.equal(metricValue(text, 'vllm:e2e_request_latency_seconds_count'), ok);
      });
    }
    const [first, again, other] = runs;
    assert.deepEqual(again, first);
    assert.notDeepEqual(other, first);
    assert.ok(first!.includes(200) && first!.includes(500), first!.join(' '));
    assert.ok(first!.every((x) => x === 200 || x === 500));
  });

  it('answers with --fail-status, streaming or not', async () => {
    await withServer({ faults: { failRate: 1, failStatus: 429 } }, async (s) => {
      for (const body of [completion(), completion({ stream: true })]) {
        const r = await postJson(`${s.url}/v1/completions`, body);
        assert.equal(r.status, 429);
        const error = r.json['error'] as Record<string, unknown>;
        assert.equal(error['code'], 'injected_fault');
        assert.equal(typeof error['message'], 'string');
        assert.ok('type' in error && 'param' in error);
      }
      const chat = await post(`${s.url}/v1/chat/completions`, {
        model: MODEL,
        messages: [{ role: 'user', content: 'x' }],
      });
      assert.equal(chat.status, 429);
      await chat.body?.cancel();
      // Only generation requests fail.
      assert.equal((await fetch(`${s.url}/v1/models`)).status, 200);
      assert.equal((await postJson(`${s.url}/tokenize`, { prompt: 'x' })).status, 200);
    });
  });

  it('--hang holds generation requests unanswered while /health and /metrics answer', async () => {
    await withServer({ faults: { hang: true } }, async (s) => {
      const controller = new AbortController();
      let answered = false;
      const pending = post(`${s.url}/v1/completions`, completion(), controller.signal).then(
        () => {
          answered = true;
        },
        () => undefined,
      );
      await waitFor(() => s.server.faults.active === 1, 'the hung request');
      assert.equal((await fetch(`${s.url}/health`)).status, 200);
      assert.equal((await fetch(`${s.url}/metrics`)).status, 200);
      assert.equal(answered, false);
      assert.equal(s.server.driver.inFlight, 0);
      // The client gives up: nothing is left behind.
      controller.abort();
      await pending;
      await waitFor(() => s.server.faults.active === 0, 'the release');
      assert.equal(answered, false);
      assert.equal(s.server.driver.engine.hasWork(), false);
    });
  });

  // The timeout only turns a regression (close waiting out the grace) into a failure, not a hang.
  it('closes hung connections on shutdown instead of waiting out the grace period', {
    timeout: 60_000,
  }, async () => {
    const server = createEngineServer({ timeScale: 1000, faults: { hang: true } });
    const { url } = await server.listen(0);
    const pending = post(`${url}/v1/completions`, completion());
    await waitFor(() => server.faults.active === 1, 'the hung request');
    await server.close(10 * 60_000);
    await assert.rejects(pending);
    assert.equal(server.faults.active, 0);
  });

  it('--first-byte-delay holds the request before the engine, and cleans up if the client leaves', async () => {
    await withServer({ faults: { firstByteDelay: 600 } }, async (s) => {
      const controller = new AbortController();
      let answered = false;
      const pending = post(`${s.url}/v1/completions`, completion(), controller.signal).then(
        () => {
          answered = true;
        },
        () => undefined,
      );
      await waitFor(() => s.server.faults.active === 1, 'the delayed request');
      assert.equal(answered, false);
      assert.equal(s.server.driver.inFlight, 0);
      controller.abort();
      await pending;
      await waitFor(() => s.server.faults.active === 0, 'the cancelled delay');
      assert.equal(s.server.driver.engine.hasWork(), false);
    });
  });

  it('--first-byte-delay then answers normally', async () => {
    await withServer({ faults: { firstByteDelay: 0.005 } }, async (s) => {
      const r = await s.client.completions.create(completion({ max_tokens: 4 }));
      assert.equal(r.choices[0]!.text, FILLER.slice(0, 4));
      const stream = await s.client.completions.create({ ...completion({ max_tokens: 4 }), stream: true });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
      assert.equal(text, FILLER.slice(0, 4));
      assert.equal(s.server.faults.active, 0);
    });
  });

  it('--stall-after idles a stream after n chunks, keeps it open, and aborts it when the client leaves', async () => {
    // Real time, so the request is still generating while the stream is stalled.
    await withServer({ timeScale: 1, faults: { stallAfter: 3 } }, async (s) => {
      const controller = new AbortController();
      const res = await post(
        `${s.url}/v1/completions`,
        completion({ max_tokens: 4096, stream: true }),
        controller.signal,
      );
      assert.equal(res.status, 200);
      const events = sse(res);
      const texts: string[] = [];
      for (let i = 0; i < 3; i++) texts.push(JSON.parse((await events.next())!).choices[0].text);
      assert.equal(texts.join(''), FILLER.slice(0, 3));
      const after = events.pending();
      // The engine goes on past the stall, and nothing more reaches the client.
      await waitFor(() => s.server.driver.engine.snapshot().generationTokensTotal >= 6, 'more tokens');
      assert.equal(after.arrived, false);
      assert.equal(s.server.driver.inFlight, 1);
      assert.equal(s.server.faults.active, 1);
      controller.abort();
      await waitFor(() => s.server.driver.inFlight === 0, 'the abort');
      assert.equal(s.server.driver.engine.hasWork(), false);
      await waitFor(() => s.server.faults.active === 0, 'the release');
    });
  });

  it('--stall-after keeps the stream open after the engine finishes, and leaves other responses alone', async () => {
    await withServer({ faults: { stallAfter: 2 } }, async (s) => {
      const controller = new AbortController();
      const res = await post(
        `${s.url}/v1/chat/completions`,
        { model: MODEL, messages: [{ role: 'user', content: 'x' }], max_tokens: 6, stream: true },
        controller.signal,
      );
      const events = sse(res);
      const role = JSON.parse((await events.next())!);
      assert.equal(role.choices[0].delta.role, 'assistant');
      for (let i = 0; i < 2; i++) {
        const chunk = JSON.parse((await events.next())!);
        assert.equal(chunk.choices[0].delta.content, FILLER[i]);
        assert.equal(chunk.choices[0].finish_reason, null);
      }
      const after = events.pending();
      await waitFor(() => s.server.driver.inFlight === 0, 'the engine to finish');
      // Still open, nothing sent: no more tokens, no finish_reason, no [DONE].
      assert.equal(after.arrived, false);
      assert.equal(s.server.faults.active, 1);
      controller.abort();
      await waitFor(() => s.server.faults.active === 0, 'the release');

      const full = await s.client.completions.create(completion({ max_tokens: 5 }));
      assert.equal(full.choices[0]!.text, FILLER.slice(0, 5));
    });
  });

  it('--health-status sets what /health answers', async () => {
    await withServer({ faults: { healthStatus: 503 } }, async (s) => {
      const r = await fetch(`${s.url}/health`);
      assert.equal(r.status, 503);
      assert.deepEqual(await r.json(), { status: 'unhealthy' });
      assert.equal((await postJson(`${s.url}/v1/completions`, completion())).status, 200);
    });
  });

  it('keeps the defaults for settings given as undefined', () => {
    const server = createEngineServer({ faults: { healthStatus: undefined, stallAfter: undefined } });
    assert.equal(server.faults.settings.healthStatus, 200);
    assert.equal(server.faults.settings.stallAfter, null);
    server.driver.close();
  });

  it('refuses settings out of range', () => {
    for (const faults of [{ failRate: 2 }, { failStatus: 200 }, { stallAfter: -1 }, { healthStatus: 99 }]) {
      assert.throws(() => createEngineServer({ faults }), /faults: /, JSON.stringify(faults));
    }
  });
});

describe('preble engine: POST /_preble/faults', () => {
  it('is not served without faultAdmin', async () => {
    await withServer({}, async (s) => {
      assert.equal((await postJson(`${s.url}/_preble/faults`, { hang: true })).status, 404);
    });
  });

  it('changes the faults at run time and reports them', async () => {
    await withServer({ faultAdmin: true, seed: 3 }, async (s) => {
      const admin = (body: unknown) => postJson(`${s.url}/_preble/faults`, body);
      const initial = (await (await fetch(`${s.url}/_preble/faults`)).json()) as Record<string, unknown>;
      assert.deepEqual(initial, {
        failRate: 0,
        failStatus: 500,
        hang: false,
        firstByteDelay: 0,
        stallAfter: null,
        healthStatus: 200,
        active: 0,
      });
      const set = await admin({ failRate: 1, failStatus: 503, healthStatus: 500 });
      assert.equal(set.status, 200);
      assert.equal(set.json['failStatus'], 503);
      assert.deepEqual(await statuses(s, 3), [503, 503, 503]);
      assert.equal((await fetch(`${s.url}/health`)).status, 500);

      await admin({ failRate: 0.5, seed: 11 });
      const first = await statuses(s, 16);
      await admin({ seed: 11 });
      assert.deepEqual(await statuses(s, 16), first);
      assert.ok(first.includes(200) && first.includes(503), first.join(' '));

      await admin({ failRate: 0, healthStatus: 200 });
      assert.deepEqual(await statuses(s, 2), [200, 200]);
      for (const bad of [{ failRate: 2 }, { failStatus: 200 }, { nope: true }, { hang: 'yes' }]) {
        const r = await admin(bad);
        assert.equal(r.status, 400, JSON.stringify(bad));
        assert.equal(typeof (r.json['error'] as { message: string }).message, 'string');
      }
    });
  });
});
