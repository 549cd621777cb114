import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { startPreble } from '../../src/bench/preble-process.ts';
import { startFakeReplica } from '../gateway/fake-replica.ts';
import { runCli } from './run-cli.ts';

test('preble serve prints its readiness line, proxies, and stops cleanly on SIGTERM', async () => {
  const replica = await startFakeReplica('r0');
  const gateway = await startPreble(['serve', '--port', '0', '--replica', replica.url]);
  try {
    assert.match(gateway.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    const res = await fetch(`${gateway.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', prompt: 'hello' }),
    });
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as { choices: { text: string }[] }).choices[0]!.text, 'abc');
    const exited = once(gateway.child, 'exit');
    process.kill(gateway.pid, 'SIGTERM');
    const [code] = await exited;
    assert.equal(code, 0);
  } finally {
    await gateway.stop('SIGKILL');
    await replica.app.close();
  }
});

test('preble serve runs from a YAML config with an API key from the environment and the admin API on', async () => {
  const replica = await startFakeReplica('r0');
  const dir = mkdtempSync(join(tmpdir(), 'preble-serve-'));
  const config = join(dir, 'gateway.yaml');
  writeFileSync(
    config,
    [
      'port: 0',
      'policy: round-robin',
      'replicas:',
      `  - url: ${replica.url}`,
      '    dialect: vllm',
      'auth:',
      '  keys:',
      '    - name: team-a',
      '      keyEnv: TEAM_A_KEY',
      '  adminKeyEnv: ADMIN_KEY',
      'limits:',
      '  maxConcurrent: 8',
      '',
    ].join('\n'),
  );
  const gateway = await startPreble(['serve', '--config', config], {
    env: { TEAM_A_KEY: 'team-a-key-0123456789', ADMIN_KEY: 'admin-key-0123456789' },
  });
  try {
    const ask = (key?: string) =>
      fetch(`${gateway.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
        body: JSON.stringify({ model: 'm', prompt: 'hello' }),
      });
    assert.equal((await ask()).status, 401);
    assert.equal((await ask('team-a-key-0123456789')).status, 200);
    const admin = await fetch(`${gateway.url}/admin/replicas`, {
      headers: { authorization: 'Bearer admin-key-0123456789' },
    });
    const listed = (await admin.json()) as { replicas: { dialect: string; state: string }[] };
    assert.deepEqual(
      listed.replicas.map((r) => [r.dialect, r.state]),
      [['vllm', 'active']],
    );
  } finally {
    await gateway.stop();
    await replica.app.close();
  }
});

test('prompts never reach the logs, even at debug level, unless --log-bodies says so', async () => {
  const replica = await startFakeReplica('r0');
  try {
    for (const logBodies of [false, true]) {
      const args = ['serve', '--port', '0', '--replica', replica.url, '--log-level', 'debug'];
      const gateway = await startPreble(logBodies ? [...args, '--log-bodies'] : args);
      const res = await fetch(`${gateway.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer not-a-real-key-123456' },
        body: JSON.stringify({ model: 'm', prompt: 'SECRET-PROMPT-4242' }),
      });
      assert.equal(res.status, 200);
      await res.text();
      await gateway.stop();
      const logs = gateway.stderr();
      assert.match(logs, /"msg":"routed"/, 'debug logging is on');
      // The feedback its replicas can give, said once at start-up (design.md), with what is missing.
      assert.equal(logs.match(/"msg":"policy feedback available"/g)?.length, 1);
      assert.match(logs, /"dialect":"preble".*"started":"engine"/);
      assert.match(logs, /preble replicas: evictions are inferred from reported cached tokens/);
      assert.doesNotMatch(logs, /not-a-real-key/, 'keys never appear');
      if (logBodies) assert.match(logs, /SECRET-PROMPT-4242/);
      else assert.doesNotMatch(logs, /SECRET-PROMPT-4242/);
    }
  } finally {
    await replica.app.close();
  }
});

test('preble serve with hf:PATH encodes long prompts on its threads and still exits 0 on SIGTERM', async () => {
  const replica = await startFakeReplica('r0');
  try {
    const gateway = await startPreble([
      'serve',
      '--port',
      '0',
      '--replica',
      replica.url,
      '--tokenizer',
      'hf:test/fixtures/hf-tokenizer',
      '--tokenizer-threads',
      '2',
    ]);
    for (const prompt of ['hello', 'hello world '.repeat(500)]) {
      const res = await fetch(`${gateway.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', prompt }),
      });
      assert.equal(res.status, 200);
      await res.text();
    }
    const exited = once(gateway.child, 'exit');
    await gateway.stop();
    assert.deepEqual(await exited, [0, null]);
  } finally {
    await replica.app.close();
  }
});

test('preble serve refuses bad flags and config with one line naming the field', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'preble-serve-'));
  const bad = join(dir, 'bad.yaml');
  writeFileSync(bad, 'port: 0\nreplicas: [http://127.0.0.1:1]\nlimits:\n  maxQueue: lots\n');
  const noKey = join(dir, 'no-key.yaml');
  writeFileSync(
    noKey,
    'port: 0\nreplicas: [http://127.0.0.1:1]\nauth:\n  adminKeyEnv: PREBLE_TEST_UNSET_VAR\n',
  );
  for (const [args, reason] of [
    [['serve', '--port', '0'], /--replica/],
    [['serve', '--replica', 'http://127.0.0.1:1'], /--port/],
    [['serve', '--port', '0', '--replica', 'ftp://x'], /replicas\.0\.url: must be an http\(s\) URL/],
    [['serve', '--port', '0', '--replica', 'http://127.0.0.1:1', '--policy', 'nope'], /unknown policy/],
    [['serve', '--port', '0', '--replica', 'http://127.0.0.1:1', '--dialect', 'tgi'], /replicas\.0\.dialect/],
    [['serve', '--port', '0', '--replica', 'http://127.0.0.1:1', '--tokenizer', 'bpe'], /unknown tokenizer/],
    [
      ['serve', '--port', '0', '--replica', 'http://127.0.0.1:1', '--tokenizer-threads', 'two'],
      /--tokenizer-threads.*non-negative integer/,
    ],
    [['serve', '--config', bad], /bad\.yaml: limits\.maxQueue: /],
    [['serve', '--config', noKey], /auth\.adminKeyEnv: environment variable PREBLE_TEST_UNSET_VAR is unset/],
    [['serve', '--config', join(dir, 'missing.yaml')], /cannot read config .*missing\.yaml/],
  ] as const) {
    const r = await runCli(args);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, reason);
    assert.doesNotMatch(r.stderr, /\n\s+at /);
  }
});
