import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCli } from './run-cli.ts';

test('preble sim --policy llumnix runs, and reports its live migrations', async () => {
  const r = await runCli([
    'sim',
    '--workload',
    'sharegpt-like',
    '--requests',
    '80',
    '--rps',
    '20',
    '--kv-tokens',
    '8000',
    '--instances',
    '2',
    '--policy',
    'llumnix',
    '--json',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout) as {
    completed: number;
    migrations: { asked: number; done: number; aborted: number; copiedTokens: number };
  };
  assert.equal(report.completed, 80);
  const m = report.migrations;
  assert.equal(m.asked, m.done + m.aborted);
  assert.ok(m.done > 0 && m.copiedTokens > 0, 'memory runs short at 8000 KV tokens: some request moves');
});

test('preble sim --queue-policy fastserve --host-kv-tokens runs; a bad pool size is one line', async () => {
  const ok = await runCli([
    'sim',
    '--workload',
    'sharegpt-like',
    '--requests',
    '40',
    '--rps',
    '20',
    '--kv-tokens',
    '8000',
    '--instances',
    '1',
    '--policy',
    'least-load',
    '--queue-policy',
    'fastserve',
    '--host-kv-tokens',
    '20000',
    '--json',
  ]);
  assert.equal(ok.code, 0, ok.stderr);
  const report = JSON.parse(ok.stdout) as {
    completed: number;
    swaps: { preemptions: number; swapOuts: number; swapIns: number };
  };
  assert.equal(report.completed, 40);
  assert.ok(report.swaps.swapOuts <= report.swaps.preemptions);
  assert.equal(report.swaps.swapIns, report.swaps.swapOuts, 'every swapped request came back');
  const bad = await runCli(['sim', '--host-kv-tokens', 'lots']);
  assert.notEqual(bad.code, 0);
  assert.equal(bad.stderr.trim().split('\n').length, 1);
});
