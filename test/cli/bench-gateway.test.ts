import assert from 'node:assert/strict';
import { test } from 'node:test';
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
    results: { mode: string; gatewayP50Ms: number; maxRequestsPerSec: number }[];
  };
  assert.deepEqual(
    out.results.map((x) => x.mode),
    ['non-streaming', 'streaming'],
  );
  for (const x of out.results) {
    assert.ok(x.gatewayP50Ms > 0);
    assert.ok(x.maxRequestsPerSec > 0);
  }
});
