import assert from 'node:assert/strict';
import { test } from 'node:test';
import { findExperiment } from '../../src/experiments/registry.ts';
import { renderReport } from '../../src/experiments/report.ts';
import { runCells } from '../../src/experiments/runner.ts';
import { SCHEDULER_SCALES, SCHEDULER_SETUPS } from '../../src/experiments/schedulers.ts';

const standIn = { azureCodeTrace: 'stand-in', azureConvTrace: 'stand-in' };

test('schedulers: one cell per trace, setup, server count, scale and series; predictors where the series needs one', () => {
  const experiment = findExperiment('schedulers');
  const cells = experiment.cells({
    requests: 15,
    seed: 0,
    ...standIn,
    only: ['fcfs', 'trail+', 'ltr', 'sal+larry'],
  });
  assert.equal(cells.length, 2 * SCHEDULER_SETUPS.length * SCHEDULER_SCALES.length * 4);
  const trail = cells.find((c) => c.series === 'trail+')!;
  assert.deepEqual(
    [trail.spec.queuePolicy, trail.spec.predictor, trail.spec.instances],
    ['trail', 'oracle', 1],
  );
  assert.equal(cells.find((c) => c.series === 'ltr')!.spec.predictor, 'rank-oracle');
  const sal = cells.filter((c) => c.series === 'sal+larry');
  assert.deepEqual(
    [...new Set(sal.map((c) => c.spec.instances))].sort(),
    SCHEDULER_SETUPS.map((s) => s.servers).sort(),
  );
  assert.ok(sal.every((c) => c.spec.queuePolicy === 'larry' && c.spec.predictor === undefined));
});

test('schedulers: a tiny run gives every claim, measured, and the report its mechanism table', () => {
  const experiment = findExperiment('schedulers');
  const only = [
    'fcfs',
    'no-preempt',
    'trail+',
    'ltr',
    'larry',
    'sal+larry',
    'power-of-two+larry',
    'random+larry',
    'random+fcfs',
  ];
  const results = runCells(experiment.cells({ requests: 20, seed: 1, ...standIn, only }));
  const claims = experiment.claims?.(results) ?? [];
  assert.deepEqual(
    claims.map((c) => c.id),
    [
      'larry-p50-ttft',
      'larry-p50-over-p95',
      'trail-p50-ttft',
      'trail-p95-ttft',
      'no-preempt-chat',
      'larry-least-sensitive',
      'sal-chat',
      'engine-over-balancer',
    ],
  );
  for (const c of claims) assert.match(c.measured, /panels at the highest scale/);
  assert.ok(results.every((r) => r.p95 !== undefined && r.p95.ttft >= r.report.ttft.p50));
  const { markdown } = renderReport(experiment, results, { command: 'test' });
  assert.match(markdown, /## Mechanism: memory pressure and LARRY/);
});
