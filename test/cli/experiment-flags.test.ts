import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCli } from './run-cli.ts';

// `preble experiment --repeats` belongs to the experiments that pool repeated runs; bad input fails in one line.

test('preble experiment --repeats: refused by an experiment that runs each cell once, and a bad count', async () => {
  for (const [args, message] of [
    [
      ['ablation', '--repeats', '2'],
      /^preble: --repeats: experiment 'ablation' runs each cell once \(only policies repeats\)\n$/,
    ],
    [
      ['policies', '--repeats', '0'],
      /^error: option '--repeats <n>' argument '0' is invalid. expected a positive integer/,
    ],
  ] as const) {
    const bad = await runCli(['experiment', ...args, '--out', '/nonexistent-dir/never']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, message);
  }
});
