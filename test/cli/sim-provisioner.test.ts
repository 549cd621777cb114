import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCli } from './run-cli.ts';

// `preble sim --provisioner` (docs/provisioning.md): the report's provisioning figures, bad input in one line.

const base = ['sim', '--workload', 'synthetic:in=256,out=32', '--requests', '60', '--rps', '6', '--json'];

test('preble sim --provisioner aladdin reports GPU-seconds; a bad spec fails with one line', async () => {
  const ok = await runCli([
    ...base,
    '--fleet',
    '1M',
    '--policy',
    'aladdin',
    '--provisioner',
    'aladdin:heartbeatSeconds=2,k5=0.5',
    '--startup-seconds',
    '1',
  ]);
  assert.equal(ok.code, 0, ok.stderr);
  const report = JSON.parse(ok.stdout) as { provisioning: Record<string, number | string> };
  assert.equal(report.provisioning.provisioner, 'aladdin');
  assert.equal(report.provisioning.startupSeconds, 1);
  assert.ok((report.provisioning.gpuSeconds as number) > 0);
  for (const [flag, message] of [
    ['nope', /^preble: unknown provisioner 'nope'; valid: aladdin\n$/],
    ['aladdin:speed=2', /^preble: unknown aladdin provisioner option 'speed'; valid: heartbeatSeconds, /],
    [
      'aladdin:heartbeatSeconds=x',
      /^preble: aladdin provisioner option 'heartbeatSeconds' must be a number, got 'x'\n$/,
    ],
  ] as const) {
    const bad = await runCli([...base, '--provisioner', flag]);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, message);
  }
});
