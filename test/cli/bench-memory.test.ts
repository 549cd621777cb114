import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCli } from './run-cli.ts';

test('bench memory samples the tree along the stream and the tree stays bounded', async () => {
  const r = await runCli([
    'bench',
    'memory',
    '--requests',
    '3000',
    '--instances',
    '2',
    '--every',
    '1000',
    '--json',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as {
    samples: { requests: number; treeNodes: number; windowEntries: number }[];
  };
  assert.deepEqual(
    out.samples.map((s) => s.requests),
    [1000, 2000, 3000],
  );
  for (const s of out.samples) {
    assert.ok(s.treeNodes > 0);
    // Each request adds at most a few nodes, and only cached or windowed ones stay.
    assert.ok(s.treeNodes <= 3 * s.requests);
  }
});
