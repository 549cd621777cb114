import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { MODEL } from './helpers.ts';

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

  it('fails with one line and a non-zero exit on a bad model or port', () => {
    for (const args of [
      ['--port', '0', '--model', 'no-such-model'],
      ['--port', 'abc'],
      ['--port', '0', '--queue-policy', 'nope'],
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
