import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startFakeReplica } from '../gateway/fake-replica.ts';
import { runCli } from './run-cli.ts';

const main = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

test('preble serve prints its readiness line, proxies, and stops cleanly on SIGTERM', async () => {
  const replica = await startFakeReplica('r0');
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', main, 'serve', '--port', '0', '--replica', replica.url],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  try {
    let out = '';
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const m = out.match(/^listening on (http:\/\/127\.0\.0\.1:\d+)$/m);
        if (m) resolve(m[1]!);
      });
      child.once('exit', (code) => reject(new Error(`exited early with ${code}`)));
    });
    const res = await fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', prompt: 'hello' }),
    });
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as { choices: { text: string }[] }).choices[0]!.text, 'abc');
    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    assert.equal(code, 0);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    await replica.app.close();
  }
});

test('preble serve refuses bad flags with one line', () => {
  for (const [args, reason] of [
    [['serve', '--port', '0'], /--replica/],
    [['serve', '--port', '0', '--replica', 'ftp://x'], /http or https/],
    [['serve', '--port', '0', '--replica', 'http://127.0.0.1:1', '--policy', 'nope'], /unknown policy/],
  ] as const) {
    const r = runCli(args);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, reason);
    assert.doesNotMatch(r.stderr, /\n\s+at /);
  }
});
