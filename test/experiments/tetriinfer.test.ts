import assert from 'node:assert/strict';
import { test } from 'node:test';
import { findExperiment } from '../../src/experiments/registry.ts';
import { renderReport } from '../../src/experiments/report.ts';
import { runCells } from '../../src/experiments/runner.ts';
import { TETRI_KV_TOKENS, TETRI_RATES } from '../../src/experiments/tetriinfer.ts';

test('tetriinfer builds its grid: five classes x three systems, prefill, admission and dispatch panels', () => {
  const experiment = findExperiment('tetriinfer');
  const cells = experiment.cells({ requests: 10, seed: 0 });
  // Per rate: 15 end-to-end, 8 admission, 6 dispatch; the prefill panel adds 5 series at 4 rates.
  assert.equal(cells.length, TETRI_RATES.length * 29 + 4 * 5);
  assert.equal(TETRI_KV_TOKENS, 7324); // (32 - 26 GB) / 819,200 bytes per token
  for (const c of cells) {
    assert.equal(c.spec.fleet === undefined, c.series.startsWith('vllm-like'));
    if (c.spec.policy === 'tetriinfer') assert.ok(c.spec.predictor !== undefined);
  }
  assert.equal(experiment.cells({ requests: 10, seed: 0, only: ['random'] }).length, TETRI_RATES.length * 2);
});

test('tetriinfer: the claims record has its seven claims in the design shape (tiny run)', () => {
  const experiment = findExperiment('tetriinfer');
  const results = runCells(experiment.cells({ requests: 8, seed: 1 }));
  const claims = experiment.claims?.(results);
  assert.ok(claims !== undefined);
  assert.deepEqual(
    claims.map((c) => c.id),
    [
      'fig11-15-sign-pattern-paper-cards',
      'fig11-15-sign-pattern-same-gpus',
      'fig16-chunked-prefill',
      'fig16-sjf-waiting',
      'fig16-schedbatch-128',
      'fig18-reserve-needs-accuracy',
      'fig19-power-of-two',
    ],
  );
  for (const c of claims) {
    assert.deepEqual(Object.keys(c).sort(), ['holds', 'id', 'measured', 'paper', 'source', 'statement']);
    assert.ok(!c.measured.startsWith('not measured'), c.id);
  }
  const { markdown } = renderReport(experiment, results, { command: 'preble experiment tetriinfer' });
  assert.match(markdown, /## End to end against the baselines/);
  assert.match(markdown, /## What the runs show/);
});
