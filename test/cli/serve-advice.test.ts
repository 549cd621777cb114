import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serveConfig } from '../../src/cli/serve.ts';
import { runCli } from './run-cli.ts';

const base = { replica: ['http://127.0.0.1:1'], prefill: [], decode: [], port: 0 };

test('--advice flags fill the advice section over the defaults', async () => {
  assert.equal((await serveConfig(base)).advice, undefined);
  const config = await serveConfig({
    ...base,
    adviceSlo: { ttft: 2, tpot: 0.1 },
    adviceInterval: 5,
    adviceHeadroom: 1.5,
  });
  assert.deepEqual(config.advice, {
    intervalSeconds: 5,
    windowSeconds: 300,
    slo: { ttft: 2, tpot: 0.1 },
    target: 0.9,
    headroom: 1.5,
    act: false,
    min: 1,
    max: 8,
  });
  // --advice alone still needs its targets.
  await assert.rejects(serveConfig({ ...base, advice: true }), /^Error: flags: advice\.slo: /);
  // Acting needs replicas of its own; a llama fleet needs no --replica.
  const slo = { ttft: 2, tpot: 0.1 };
  await assert.rejects(serveConfig({ ...base, adviceSlo: slo, adviceAct: true }), /--llama-replicas/);
  await assert.rejects(serveConfig({ ...base, llamaReplicas: 1, llamaPreset: 'huge' }), /--llama-preset/);
  const own = await serveConfig({ ...base, replica: [], adviceSlo: slo, adviceAct: true, llamaReplicas: 2 });
  assert.equal(own.advice?.act, true);
  // Bounds on what it owns, checked as the config file's.
  const bounded = await serveConfig({ ...base, adviceSlo: slo, adviceMin: 2, adviceMax: 3 });
  assert.deepEqual([bounded.advice?.min, bounded.advice?.max], [2, 3]);
  await assert.rejects(serveConfig({ ...base, adviceSlo: slo, adviceMin: 4, adviceMax: 3 }), /advice\.min/);
});

test('bad --advice flags are refused with one line', async () => {
  for (const [args, reason] of [
    [['--advice-slo', 'ttft=1'], /--advice-slo.*expected both ttft and tpot/],
    [['--advice-headroom', 'lots'], /--advice-headroom.*positive number/],
    [['--advice-max', '0'], /--advice-max/],
  ] as const) {
    const r = await runCli(['serve', '--port', '0', '--replica', 'http://127.0.0.1:1', ...args]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, reason);
    assert.doesNotMatch(r.stderr, /\n\s+at /);
  }
});
