import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCli } from './run-cli.ts';

// `preble sim --queue-policy-option` reaches the engines; bad input fails in one line.

const base = ['sim', '--workload', 'toolbench', '--instances', '1', '--rps', '40', '--requests', '200'];
const meanLatency = (stdout: string) => (JSON.parse(stdout) as { latency: { mean: number } }).latency.mean;

test('preble sim --queue-policy-option lpm.fcfsAbove=0 serves the queue unsorted', async () => {
  // One overloaded instance: lpm's order by cached prefix matters, unsorted (0) changes the run.
  const sorted = await runCli([...base, '--json']);
  const unsorted = await runCli([...base, '--json', '--queue-policy-option', 'lpm.fcfsAbove=0']);
  assert.equal(sorted.code, 0, sorted.stderr);
  assert.equal(unsorted.code, 0, unsorted.stderr);
  assert.notEqual(meanLatency(unsorted.stdout), meanLatency(sorted.stdout));
  for (const [args, message] of [
    [
      ['--queue-policy-option', 'lpm.x=1'],
      /^preble: --queue-policy-option: unknown lpm option 'x'; valid: fcfsAbove\n$/,
    ],
    [
      ['--queue-policy-option', 'lpm.fcfsAbove=many'],
      /^preble: --queue-policy-option: lpm option 'fcfsAbove' must be a number, got 'many'\n$/,
    ],
    [
      ['--queue-policy-option', 'nope.a=1'],
      /^preble: --queue-policy-option: unknown queue policy 'nope'; valid: fcfs, /,
    ],
    [
      ['--queue-policy', 'fcfs', '--queue-policy-option', 'lpm.fcfsAbove=3'],
      /^preble: --queue-policy-option lpm.fcfsAbove=3: the run's queue policy is 'fcfs'\n$/,
    ],
  ] as const) {
    const bad = await runCli([...base, ...args]);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, message);
  }
});
