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

test('preble experiment --fleet: only the policies grid takes one, of mixed instances; bad input fails in one line', async () => {
  for (const [args, message] of [
    [
      ['ablation', '--fleet', 'examples/fleets/mixed-a6000-h100.yaml'],
      /^preble: --fleet: experiment 'ablation' runs its own fleets \(only policies takes one\)\n$/,
    ],
    [
      ['policies', '--fleet', '2P2D'],
      /^preble: --fleet: the policies grid runs colocated policies; instance 0 is prefill \(every instance must be mixed\)\n$/,
    ],
    [
      ['policies', '--fleet', '/nonexistent/fleet.yaml'],
      /^preble: cannot read fleet file \/nonexistent\/fleet\.yaml: ENOENT\n$/,
    ],
  ] as const) {
    const bad = await runCli(['experiment', ...args, '--out', '/tmp']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, message);
  }
});

test('preble experiment --policy-option: a policy the experiment does not run, or a bad option, fails in one line', async () => {
  for (const [args, message] of [
    [
      ['distserve', '--policy-option', 'e2-plus.latencyPower=1'],
      /^preble: --policy-option e2-plus\.latencyPower=1: no simulation of 'distserve' runs e2-plus \(its policies: round-robin, least-load, distserve\)\n$/,
    ],
    [
      ['preble-e2e', '--policy-option', 'e2-plus.latencyPower=many'],
      /^preble: e2-plus option 'latencyPower' must be a number, got 'many'\n$/,
    ],
    [['preble-e2e', '--policy-option', 'e2-plus.nope=1'], /^preble: unknown e2-plus option 'nope'; valid: /],
    // Refused by the policy's constructor, before the first simulation runs (no progress line).
    [
      ['preble-e2e', '--policy-option', 'e2-plus.latencyPower=0.5'],
      /^preble: e2-plus option 'latencyPower' must be >= 1, got 0\.5\n$/,
    ],
  ] as const) {
    const bad = await runCli(['experiment', ...args, '--out', '/tmp']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, message);
  }
});
