import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCli } from './run-cli.ts';

// Speed is printed, never asserted (it depends on the machine); the test pins what the benchmark runs.
test('preble bench sim runs a colocated cluster or a disaggregated fleet and prints its figures', async () => {
  const args = ['bench', 'sim', '--requests', '300', '--workload', 'synthetic:in=256,out=16', '--json'];
  const colocated = await runCli([...args, '--instances', '2']);
  assert.equal(colocated.code, 0, colocated.stderr);
  const a = JSON.parse(colocated.stdout);
  assert.equal(a.instances, 2);
  assert.equal(a.requests, 300);
  assert.equal(a.fleet, undefined);
  const disaggregated = await runCli([...args, '--fleet', '1P1D', '--policy', 'distserve']);
  assert.equal(disaggregated.code, 0, disaggregated.stderr);
  const b = JSON.parse(disaggregated.stdout);
  assert.deepEqual([b.instances, b.fleet, b.policy, b.requests], [2, '1P1D', 'distserve', 300]);
  for (const key of ['wallSeconds', 'requestsPerSec', 'eventsPerSec', 'meanLatency'])
    assert.ok(b[key] > 0, key);
});
