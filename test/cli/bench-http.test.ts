import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { createEngineServer } from '../../src/emulator/server.ts';
import { runCli } from './run-cli.ts';

const engine = createEngineServer({ timeScale: 1000 });
after(() => engine.close(0));

test('bench http loads an OpenAI-compatible server and reports percentiles and the hit rate', async () => {
  const { url } = await engine.listen(0, '127.0.0.1');
  // runCli is synchronous: the engine must answer from this process's event loop, so run it in a child.
  const { spawn } = await import('node:child_process');
  const { fileURLToPath } = await import('node:url');
  const main = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
  const child = spawn(process.execPath, [
    '--import',
    'tsx',
    main,
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
  let out = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  assert.equal(code, 0);
  const r = JSON.parse(out) as { completed: number; latency: { p99: number }; cacheHitRate: number };
  assert.equal(r.completed, 20);
  assert.ok(r.latency.p99 > 0);
  assert.ok(r.cacheHitRate > 0, 'toolbench prompts share their system prompt');
});

test('bench http refuses a bad URL with one line', () => {
  const r = runCli(['bench', 'http', '--url', 'not a url', '--model', 'm']);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /Invalid URL/);
  assert.doesNotMatch(r.stderr, /\n\s+at /);
});
