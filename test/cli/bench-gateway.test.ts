import assert from 'node:assert/strict';
import { test } from 'node:test';
import { benchPrompt } from '../../src/bench/gateway-load.ts';
import { runCli } from './run-cli.ts';

test('bench gateway runs a short measurement end to end and stops its processes', async () => {
  const r = await runCli([
    'bench',
    'gateway',
    '--rps',
    '50',
    '--seconds',
    '0.3',
    '--concurrency',
    '4',
    '--json',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as {
    results: { mode: string; gatewayP50Ms: number; loopLagP99Ms: number; maxRequestsPerSec: number }[];
  };
  assert.deepEqual(
    out.results.map((x) => x.mode),
    ['non-streaming', 'streaming'],
  );
  for (const x of out.results) {
    assert.ok(x.gatewayP50Ms > 0);
    assert.ok(x.maxRequestsPerSec > 0);
    assert.ok(Number.isFinite(x.loopLagP99Ms) && x.loopLagP99Ms >= 0);
  }
});

test('bench gateway passes --tokenizer and --tokenizer-threads to the gateway and sends prompts of --prompt-chars characters', async () => {
  const r = await runCli([
    'bench',
    'gateway',
    '--rps',
    '20',
    '--seconds',
    '0.2',
    '--concurrency',
    '2',
    '--tokenizer',
    'hf:test/fixtures/hf-tokenizer',
    '--tokenizer-threads',
    '1',
    '--prompt-chars',
    '2000',
    '--json',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as {
    tokenizer: string;
    tokenizerThreads: number;
    promptChars: number;
    results: unknown[];
  };
  assert.equal(out.tokenizer, 'hf:test/fixtures/hf-tokenizer');
  assert.equal(out.tokenizerThreads, 1);
  assert.equal(out.promptChars, 2000);
  assert.equal(out.results.length, 2);
});

test('benchPrompt gives exactly the asked length, in words', async () => {
  for (const n of [1, 10, 59, 1000, 10_000]) assert.equal(benchPrompt(n).length, n);
  assert.match(benchPrompt(200), /^(\w+ )+\w*$/);
});
