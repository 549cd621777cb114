import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { runCli } from './run-cli.ts';

const SMALL = [
  'plan',
  '--model',
  'llama3-8b',
  '--workload',
  'synthetic:in=256,out=32',
  '--slo',
  'ttft=0.5,tpot=0.05',
  '--gpus',
  'a100,h100',
  '--tp',
  '1',
  '--batch',
  '8,32',
  '--chunk',
  '512',
  '--requests',
  '60',
  '--tolerance',
  '0.1',
  '--threads',
  '0',
  '--no-cache',
];

describe('preble plan', () => {
  test('bad input: one line naming the problem, a non-zero exit', async () => {
    for (const [args, reason] of [
      [['--model', 'gpt-9'], /unknown model shape 'gpt-9'/],
      [['--slo', 'ttft=1'], /--slo: expected both ttft and tpot/],
      [['--layout', '2X'], /--layout: expected NM or NPMD/],
      [['--gpus', 'tpu'], /--gpus: unknown GPU 'tpu'/],
      [['--question', 'oracle'], /--question: expected one of vidur, distserve, splitwise, aladdin/],
      [['--workload', 'nope'], /unknown workload 'nope'/],
      [['--question', 'distserve', '--max-helpers', '0'], /--max-helpers/],
    ] as const) {
      const { code, stdout, stderr } = await runCli([...SMALL, ...args]);
      assert.notEqual(code, 0, args.join(' '));
      assert.equal(stdout, '');
      assert.match(stderr, reason);
      assert.equal(stderr.trim().split('\n').length, 1, stderr);
    }
  });

  test('the recommendation for a rate, replayed with preble sim, meets the SLOs it was planned for', async () => {
    const out = mkdtempSync(join(tmpdir(), 'preble-plan-'));
    const { code, stdout, stderr } = await runCli([...SMALL, '--rate', '12', '--json', '--out', out]);
    assert.equal(code, 0, stderr);
    const plan = JSON.parse(stdout) as {
      best: { capacity: number; policy: string; verification: { passed: boolean } };
      runnerUp?: object;
      pareto: object[];
      configurations: number;
      replay: string[];
    };
    assert.equal(plan.configurations, 4);
    assert.ok(plan.best.capacity >= 12 && plan.best.verification.passed);
    assert.ok(plan.runnerUp !== undefined && plan.pareto.length > 0);
    for (const file of ['plan.json', 'report.md', 'pareto.svg', 'pareto.png', 'fleet.json'])
      assert.ok(readFileSync(join(out, file)).length > 0, file);
    const replay = await runCli([...plan.replay, '--json']);
    assert.equal(replay.code, 0, replay.stderr);
    const report = JSON.parse(replay.stdout) as { rps: number; sloAttainment: { both: number } };
    assert.equal(report.rps, 12);
    assert.ok(report.sloAttainment.both >= 0.9, JSON.stringify(report.sloAttainment));
  });
});
