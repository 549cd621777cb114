import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCli } from './run-cli.ts';

/** A tiny ShareGPT-like run on small KV memory (8000 tokens per instance: memory runs short), as JSON. */
async function tinySim(
  requests: number,
  instances: number,
  ...rest: string[]
): Promise<Record<string, unknown>> {
  const args = ['sim', '--workload', 'sharegpt-like', '--requests', String(requests), '--rps', '20'];
  const r = await runCli([
    ...args,
    '--kv-tokens',
    '8000',
    '--instances',
    String(instances),
    ...rest,
    '--json',
  ]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

test('preble sim --policy llumnix runs, and reports its live migrations', async () => {
  const report = await tinySim(80, 2, '--policy', 'llumnix');
  assert.equal(report['completed'], 80);
  const m = report['migrations'] as { asked: number; done: number; aborted: number; copiedTokens: number };
  assert.equal(m.asked, m.done + m.aborted);
  assert.ok(m.done > 0 && m.copiedTokens > 0, 'memory runs short: some request moves');
});

test('preble sim --queue-policy fastserve --host-kv-tokens runs; a bad pool size is one line', async () => {
  const report = await tinySim(
    40,
    1,
    '--policy',
    'least-load',
    '--queue-policy',
    'fastserve',
    '--host-kv-tokens',
    '20000',
  );
  assert.equal(report['completed'], 40);
  const swaps = report['swaps'] as { preemptions: number; swapOuts: number; swapIns: number };
  assert.ok(swaps.swapOuts <= swaps.preemptions);
  assert.equal(swaps.swapIns, swaps.swapOuts, 'every swapped request came back');
  const bad = await runCli(['sim', '--host-kv-tokens', 'lots']);
  assert.notEqual(bad.code, 0);
  assert.equal(bad.stderr.trim().split('\n').length, 1);
});
