import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lengthPredictorNames } from '../../src/core/length/registry.ts';
import { runCli } from './run-cli.ts';

test('preble sim --predictor runs a predicted-length queue policy and names the predictor in the report', async () => {
  const r = await runCli([
    'sim',
    '--workload',
    'synthetic:in=200,out=lognormal(mean=60,sd=40,max=300)',
    '--requests',
    '30',
    '--rps',
    '20',
    '--instances',
    '1',
    '--policy',
    'round-robin',
    '--queue-policy',
    'trail',
    '--predictor',
    'tetriinfer-100:seed=3',
    '--json',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout) as { predictor?: string; queuePolicy: string; completed: number };
  assert.deepEqual(
    [report.predictor, report.queuePolicy, report.completed],
    ['tetriinfer-100:seed=3', 'trail', 30],
  );
});

test('preble sim rejects a bad --predictor with one line, and --help lists the predictors', async () => {
  for (const [spec, reason] of [
    ['nope', /unknown length predictor 'nope'; valid names: oracle/],
    ['oracle-bucket:accuracy=2', /accuracy must lie in \[0, 1\]/],
    ['history:bogus=1', /history takes inputBucket, prior/],
  ] as const) {
    const r = await runCli(['sim', '--workload', 'toolbench', '--requests', '5', '--predictor', spec]);
    assert.notEqual(r.code, 0, spec);
    assert.match(r.stderr, reason);
    assert.doesNotMatch(r.stderr, /\n\s+at /);
  }
  const help = await runCli(['sim', '--help']);
  for (const name of lengthPredictorNames) assert.match(help.stdout, new RegExp(`\\n  ${name}: `), name);
});
