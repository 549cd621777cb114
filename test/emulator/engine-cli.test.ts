import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { MODEL, postJson, waitFor } from './helpers.ts';

const entry = fileURLToPath(new URL('./engine-cli-entry.ts', import.meta.url));

function spawnEngine(args: readonly string[]): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', entry, 'engine', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Resolves with the first stdout line (the readiness line), rejects if the process exits first. */
function readyLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve(out.slice(0, nl));
    });
    child.on('exit', (code) => reject(new Error(`exited ${code} before ready: ${err}`)));
  });
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
    const child = spawnEngine(['--port', '0', '--time-scale', '1000', '--kv-tokens', '50000']);
    try {
      const line = await readyLine(child);
      const m = /^listening on (http:\/\/127\.0\.0\.1:(\d+))$/.exec(line);
      assert.ok(m, line);
      assert.ok(Number(m[2]) > 0);
      const res = await fetch(`${m[1]}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, prompt: 'hello', max_tokens: 3 }),
      });
      assert.equal(res.status, 200);
      const body = (await res.json()) as { usage: { completion_tokens: number } };
      assert.equal(body.usage.completion_tokens, 3);
      const exited = once(child, 'exit');
      assert.ok(child.kill('SIGTERM'));
      const [code] = await exited;
      assert.equal(code, 0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  // --grace 600: were shutdown to wait for the hung request, the test would time out instead of passing.
  it('injects faults, flips them through /_preble/faults, and exits on SIGTERM with a request hung', {
    timeout: 60_000,
  }, async () => {
    const child = spawnEngine([
      ...['--port', '0', '--time-scale', '1000', '--grace', '600'],
      ...['--hang', '--health-status', '503', '--fault-admin'],
    ]);
    try {
      const url = /^listening on (\S+)$/.exec(await readyLine(child))![1]!;
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
      const exited = once(child, 'exit');
      assert.ok(child.kill('SIGTERM'));
      const [code] = await exited;
      assert.equal(code, 0);
      assert.equal(await stuck, 'closed');
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  it('fails the same requests for the same --seed across runs', async () => {
    const runs: number[][] = [];
    for (let run = 0; run < 2; run++) {
      const child = spawnEngine(['--port', '0', '--time-scale', '1000', '--fail-rate', '0.5', '--seed', '9']);
      try {
        const url = /^listening on (\S+)$/.exec(await readyLine(child))![1]!;
        const seq: number[] = [];
        for (let i = 0; i < 16; i++) {
          const res = await generate(url);
          await res.body?.cancel();
          seq.push(res.status);
        }
        runs.push(seq);
      } finally {
        child.kill('SIGTERM');
        if (child.exitCode === null) await once(child, 'exit');
      }
    }
    assert.deepEqual(runs[1], runs[0]);
    assert.ok(runs[0]!.includes(200) && runs[0]!.includes(500), runs[0]!.join(' '));
  });

  it('fails with one line and a non-zero exit on a bad flag value', () => {
    for (const args of [
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
    ]) {
      const r = spawnSync(process.execPath, ['--import', 'tsx', entry, 'engine', ...args], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      assert.notEqual(r.status, 0, args.join(' '));
      assert.equal(r.stdout, '');
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    }
  });
});
