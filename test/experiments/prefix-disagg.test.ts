import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  PREFIX_DISAGG_DESIGNS,
  PREFIX_DISAGG_WORKLOADS,
  prefixDisaggFleet,
  prefixDisaggRates,
} from '../../src/experiments/prefix-disagg.ts';
import { findExperiment } from '../../src/experiments/registry.ts';
import { renderReport } from '../../src/experiments/report.ts';
import { runCells } from '../../src/experiments/runner.ts';

test('prefix-disagg builds one cell per workload, rate and design, every fleet 4 instances over PCIe', () => {
  const experiment = findExperiment('prefix-disagg');
  const cells = experiment.cells({ requests: 10, seed: 0 });
  assert.equal(cells.length, PREFIX_DISAGG_WORKLOADS.length * 2 * PREFIX_DISAGG_DESIGNS.length);
  assert.deepEqual(prefixDisaggRates('toolbench'), [8, 16]);
  for (const name of ['4M', '2P2D', '1P1D2M'] as const) {
    const fleet = prefixDisaggFleet(name);
    assert.equal(fleet.instances.length, 4);
    assert.equal(fleet.nodeLink.class, 'pcie-host');
  }
  assert.deepEqual(
    prefixDisaggFleet('1P1D2M').instances.map((i) => i.role),
    ['prefill', 'decode', 'mixed', 'mixed'],
  );
  // The colocated baseline runs without a fleet (4 mixed instances), the others on theirs.
  for (const c of cells) assert.equal(c.spec.fleet === undefined, c.series === 'e2 (4M)');
  assert.equal(experiment.cells({ requests: 10, seed: 0, only: ['prefix-pd (2P2D)'] }).length, 6);
});

test('prefix-disagg: the claims record has its four claims in the design shape (tiny run)', () => {
  const experiment = findExperiment('prefix-disagg');
  const results = runCells(experiment.cells({ requests: 40, seed: 1 }));
  const claims = experiment.claims?.(results);
  assert.ok(claims !== undefined);
  assert.deepEqual(
    claims.map((c) => c.id),
    [
      'kv-bytes-vs-distserve',
      'latency-vs-colocated-e2',
      'latency-vs-distserve',
      'decider-colocates-cached-prompts',
    ],
  );
  for (const c of claims) {
    assert.deepEqual(Object.keys(c).sort(), ['holds', 'id', 'measured', 'paper', 'source', 'statement']);
    assert.ok(!c.measured.startsWith('not measured'), c.id);
  }
  const { markdown } = renderReport(experiment, results, { command: 'preble experiment prefix-disagg' });
  assert.match(markdown, /## The mechanism, per workload and load/);
  assert.match(markdown, /decisions \(of 40 requests\)/);
  // Only e2's cells move no KV; the claims' measures read kvMoved from the disaggregated runs.
  for (const r of results) assert.equal(r.report.kvMoved === undefined, r.cell.series === 'e2 (4M)');
});
