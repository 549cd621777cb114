import assert from 'node:assert/strict';
import { test } from 'node:test';
import { costModelPreset } from '../../src/core/cost-model/presets.ts';
import {
  ALADDIN_DESIGNS,
  ALADDIN_MODEL,
  ALADDIN_RATES,
  ALADDIN_THETAS,
  aladdinSlo,
  historyReplay,
} from '../../src/experiments/aladdin.ts';
import { findExperiment } from '../../src/experiments/registry.ts';
import { renderReport } from '../../src/experiments/report.ts';
import { runCells } from '../../src/experiments/runner.ts';

test("aladdin's SLOs follow the paper's rules on the cost model", () => {
  const c = costModelPreset(ALADDIN_MODEL);
  const slo = aladdinSlo();
  assert.equal(slo.ttft, c.prefillTime(4096, 0));
  const solo = c.iterationTime({ requests: 1, newTokens: 1, seqTokens: 4096, newTimesSeq: 4096 });
  assert.ok(Math.abs(slo.tpot - 1.3 * solo) < 1e-12);
});

test('aladdin builds one cell per design and rate of its mode, with the run SLO and theta', () => {
  const cells = findExperiment('aladdin').cells({ requests: 10, seed: 0 });
  const expected = ALADDIN_DESIGNS.reduce((n, d) => n + ALADDIN_RATES[d.mode].length, 0);
  assert.equal(cells.length, expected);
  for (const c of cells) assert.deepEqual(c.spec.slo, aladdinSlo());
  const thetas = cells.filter((c) => c.spec.policy === 'aladdin').map((c) => c.spec.policyOptions?.theta);
  assert.deepEqual([...new Set(thetas)], [...ALADDIN_THETAS]);
  const split = cells.filter((c) => c.series === 'distserve (P/D JSQ)');
  assert.ok(split.every((c) => c.spec.fleet?.some((i) => i.role === 'decode')));
});

test('aladdin: the claims record, the GPUs-needed table and its plot (tiny run)', () => {
  const experiment = findExperiment('aladdin');
  const cells = experiment.cells({
    requests: 12,
    seed: 1,
    only: ['aladdin θ=0.5', 'least-load (JSQ)', 'power-of-two'],
  });
  const results = runCells(cells);
  const claims = experiment.claims?.(results) ?? [];
  assert.equal(claims.length, 3 * ALADDIN_THETAS.length);
  for (const c of claims) {
    assert.equal(typeof c.holds, 'boolean');
    assert.ok(c.measured.length > 0 && c.paper.length > 0);
  }
  // Split phase did not run: its claims say so and do not hold.
  assert.ok(
    claims.filter((c) => c.id.startsWith('split')).every((c) => !c.holds && /not measured/.test(c.measured)),
  );
  const { markdown, plots } = renderReport(experiment, results, { command: 'test' });
  assert.match(markdown, /## GPUs needed/);
  assert.ok(plots.some((p) => p.file === 'gpus-needed'));
});

test('historyReplay predicts each request from the ones finished before it arrived (bucket mean, else the prior)', () => {
  const records = [
    { id: 'a', arrival: 0, finish: 1, promptTokens: 100, outputTokens: 10 },
    { id: 'b', arrival: 0.5, finish: 3, promptTokens: 200, outputTokens: 30 },
    { id: 'c', arrival: 2, finish: 4, promptTokens: 300, outputTokens: 50 },
    { id: 'd', arrival: 3.5, finish: 5, promptTokens: 400, outputTokens: 1 },
    { id: 'e', arrival: 3.5, finish: 5, promptTokens: 900, outputTokens: 1 },
  ];
  const p = historyReplay(records);
  // a and b before anything finished: the prior; c after a; d after a and b; e in another bucket.
  assert.deepEqual(
    [...p.entries()],
    [
      ['a', 256],
      ['b', 256],
      ['c', 10],
      ['d', 20],
      ['e', 256],
    ],
  );
});
