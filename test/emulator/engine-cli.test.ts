import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { type PrebleProcess, startPreble } from '../../src/bench/preble-process.ts';
import { runCli } from '../cli/run-cli.ts';
import { MODEL, postJson, waitFor } from './helpers.ts';

function startEngine(args: readonly string[]): Promise<PrebleProcess> {
  return startPreble(['engine', ...args]);
}

/** SIGTERM by PID, as a user would, and the exit code. */
async function terminate(engine: PrebleProcess): Promise<number | null> {
  const exited = once(engine.child, 'exit');
  process.kill(engine.pid, 'SIGTERM');
  const [code] = (await exited) as [number | null];
  return code;
}

function generate(url: string, signal?: AbortSignal): Promise<Response> {
  return fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, prompt: 'hello', max_tokens: 3 }),
    signal: signal ?? null,
  });
}

describe('preble engine CLI', () => {
  it('prints the readiness line, serves, and exits 0 on SIGTERM', async () => {
    const engine = await startEngine(['--port', '0', '--time-scale', '1000', '--kv-tokens', '50000']);
    try {
      const m = /^http:\/\/127\.0\.0\.1:(\d+)$/.exec(engine.url);
      assert.ok(m, engine.url);
      assert.ok(Number(m[1]) > 0);
      const res = await fetch(`${engine.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, prompt: 'hello', max_tokens: 3 }),
      });
      assert.equal(res.status, 200);
      const body = (await res.json()) as { usage: { completion_tokens: number } };
      assert.equal(body.usage.completion_tokens, 3);
      assert.equal(await terminate(engine), 0);
    } finally {
      await engine.stop('SIGKILL');
    }
  });

  // --grace 600: were shutdown to wait for the hung request, the test would time out instead of passing.
  it('injects faults, flips them through /_preble/faults, and exits on SIGTERM with a request hung', {
    timeout: 60_000,
  }, async () => {
    const engine = await startEngine([
      ...['--port', '0', '--time-scale', '1000', '--grace', '600'],
      ...['--hang', '--health-status', '503', '--fault-admin'],
    ]);
    try {
      const url = engine.url;
      const health = await fetch(`${url}/health`);
      assert.equal(health.status, 503);
      const active = async () =>
        ((await (await fetch(`${url}/_preble/faults`)).json()) as { active: number }).active;

      const controller = new AbortController();
      const hung = generate(url, controller.signal).then(
        () => 'answered',
        () => 'gave up',
      );
      await waitFor(async () => (await active()) === 1, 'the hung request');
      const flip = await postJson(`${url}/_preble/faults`, { hang: false, failRate: 1, failStatus: 503 });
      assert.equal(flip.status, 200);
      const failed = await generate(url);
      assert.equal(failed.status, 503);
      assert.equal(((await failed.json()) as { error: { code: string } }).error.code, 'injected_fault');
      controller.abort();
      assert.equal(await hung, 'gave up');
      await waitFor(async () => (await active()) === 0, 'the release');

      await postJson(`${url}/_preble/faults`, { hang: true });
      const stuck = generate(url).then(
        () => 'answered',
        () => 'closed',
      );
      await waitFor(async () => (await active()) === 1, 'the second hung request');
      assert.equal(await terminate(engine), 0);
      assert.equal(await stuck, 'closed');
    } finally {
      await engine.stop('SIGKILL');
    }
  });

  it('fails the same requests for the same --seed across runs', async () => {
    const runs: number[][] = [];
    for (let run = 0; run < 2; run++) {
      const engine = await startEngine([
        '--port',
        '0',
        '--time-scale',
        '1000',
        '--fail-rate',
        '0.5',
        '--seed',
        '9',
      ]);
      try {
        const url = engine.url;
        const seq: number[] = [];
        for (let i = 0; i < 16; i++) {
          const res = await generate(url);
          await res.body?.cancel();
          seq.push(res.status);
        }
        runs.push(seq);
      } finally {
        await engine.stop();
      }
    }
    assert.deepEqual(runs[1], runs[0]);
    assert.ok(runs[0]!.includes(200) && runs[0]!.includes(500), runs[0]!.join(' '));
  });

  it('fails with one line and a non-zero exit on a bad flag value', async () => {
    const cases = [
      ['--port', '0', '--model', 'no-such-model'],
      ['--port', 'abc'],
      ['--port', '0', '--queue-policy', 'nope'],
      ['--port', '0', '--fail-rate', '1.5'],
      ['--port', '0', '--fail-rate', 'often'],
      ['--port', '0', '--fail-status', '200'],
      ['--port', '0', '--fail-status', '600'],
      ['--port', '0', '--first-byte-delay', '-1'],
      ['--port', '0', '--first-byte-delay', '1e9'],
      ['--port', '0', '--stall-after', '-1'],
      ['--port', '0', '--stall-after', '2.5'],
      ['--port', '0', '--health-status', 'ok'],
    ];
    const results = await Promise.all(cases.map((args) => runCli(['engine', ...args])));
    results.forEach((r, i) => {
      assert.notEqual(r.code, 0, cases[i]!.join(' '));
      assert.equal(r.stdout, '');
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    });
  });
});
