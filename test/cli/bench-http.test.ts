import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { createEngineServer } from '../../src/emulator/server.ts';
import { runCli } from './run-cli.ts';

const engine = createEngineServer({ timeScale: 1000 });
after(() => engine.close(0));
let listening: Promise<{ url: string }> | undefined;
/** Start the engine once, whichever test asks first. */
async function engineUrl(): Promise<string> {
  if (listening === undefined) listening = engine.listen(0, '127.0.0.1');
  return (await listening).url;
}

test('bench http loads an OpenAI-compatible server and reports percentiles and the hit rate', async () => {
  const url = await engineUrl();
  const {
    code,
    stdout: out,
    stderr,
  } = await runCli([
    'bench',
    'http',
    '--url',
    url,
    '--model',
    'mistral-7b-a6000',
    '--requests',
    '20',
    '--rps',
    '50',
    '--json',
  ]);
  assert.equal(code, 0, stderr);
  const r = JSON.parse(out) as { completed: number; latency: { p99: number }; cacheHitRate: number };
  assert.equal(r.completed, 20);
  assert.ok(r.latency.p99 > 0);
  assert.ok(r.cacheHitRate > 0, 'toolbench prompts share their system prompt');
});

test('bench http replays an Azure trace file, re-timed to --rps', async () => {
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = mkdtempSync(join(tmpdir(), 'preble-trace-'));
  const rows = Array.from({ length: 8 }, (_, i) => `2023-11-16 18:17:0${i}.0000000,${100 + i},3`);
  const file = join(dir, 'azure.csv');
  writeFileSync(file, `TIMESTAMP,ContextTokens,GeneratedTokens\n${rows.join('\n')}\n`);
  const target = await engineUrl();
  const {
    code,
    stdout: out,
    stderr,
  } = await runCli([
    'bench',
    'http',
    '--url',
    target,
    '--model',
    'mistral-7b-a6000',
    '--workload',
    `azure:${file}`,
    '--rps',
    '10',
    '--json',
  ]);
  assert.equal(code, 0, stderr);
  const r = JSON.parse(out) as { completed: number; rps: number };
  assert.equal(r.completed, 8);
  assert.equal(r.rps, 10);
});

test('bench http refuses a bad URL with one line', async () => {
  const r = await runCli(['bench', 'http', '--url', 'not a url', '--model', 'm']);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /Invalid URL/);
  assert.doesNotMatch(r.stderr, /\n\s+at /);
});

test('bench http counts failures by kind and exits non-zero with one line when nothing succeeded', async () => {
  const url = await engineUrl();
  // Not runCli: the engine answers from this process, whose event loop must keep running.
  const wrongModel = await runCli([
    'bench',
    'http',
    '--url',
    url,
    '--model',
    'no-such-model',
    '--requests',
    '5',
    '--rps',
    '50',
    '--json',
  ]);
  assert.equal(wrongModel.code, 1);
  const r = JSON.parse(wrongModel.stdout) as {
    completed: number;
    failed: number;
    errors: { kind: string; count: number }[];
  };
  assert.equal(r.completed, 0);
  assert.equal(r.failed, 5);
  assert.deepEqual(r.errors, [{ kind: 'HTTP 404 model_not_found', count: 5 }]);
  assert.equal(
    wrongModel.stderr.trim(),
    'preble: no request succeeded (5 failed: 5 x HTTP 404 model_not_found)',
  );

  // A port nobody listens on: connection errors, in the text report as well.
  const { createServer } = await import('node:net');
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as { port: number }).port;
  await new Promise((resolve) => probe.close(resolve));
  const refused = await runCli([
    'bench',
    'http',
    '--url',
    `http://127.0.0.1:${port}`,
    '--model',
    'm',
    '--requests',
    '3',
    '--rps',
    '50',
  ]);
  assert.equal(refused.code, 1);
  assert.match(
    refused.stderr,
    /^preble: no request succeeded \(3 failed: 3 x connection error ECONNREFUSED\)\n$/,
  );
  assert.equal(refused.stdout, '', 'no table of zeros');
});
