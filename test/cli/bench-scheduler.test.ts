import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCli } from './run-cli.ts';

test('bench scheduler --json prints one JSON object with a result per policy', async () => {
  const r = await runCli([
    'bench',
    'scheduler',
    '--requests',
    '300',
    '--instances',
    '3',
    '--policy',
    'e2,round-robin',
    '--json',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as {
    results: { policy: string; decisionsPerSec: number; p99DecisionMicros: number }[];
  };
  assert.deepEqual(
    out.results.map((x) => x.policy),
    ['e2', 'round-robin'],
  );
  for (const x of out.results) {
    assert.ok(x.decisionsPerSec > 0);
    assert.ok(x.p99DecisionMicros >= 0);
  }
  assert.equal(r.stdout.trim().split('\n').length, 1, 'nothing but the JSON object on stdout');
});

test('bad input gets one clear line and a non-zero exit, never a stack trace', async () => {
  for (const [args, reason] of [
    [['bench', 'scheduler', '--instances', '0'], /positive integer/],
    [['bench', 'scheduler', '--policy', 'nope'], /unknown policy 'nope'; valid policies: e2, round-robin/],
    [['bench', 'scheduler', '--workload', 'nope', '--requests', '10'], /unknown workload 'nope'/],
    [['bench', 'scheduler', '--model', 'nope', '--requests', '10'], /nope/],
    [['no-such-command'], /unknown command/],
  ] as const) {
    const r = await runCli(args);
    assert.notEqual(r.code, 0, `${args.join(' ')} must fail`);
    assert.match(r.stderr, reason);
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
  }
});

test('--help lists the commands', async () => {
  const r = await runCli(['bench', '--help']);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /scheduler/);
  assert.match(r.stdout, /memory/);
});
