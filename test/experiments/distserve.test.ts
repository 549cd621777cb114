import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  DISTSERVE_DESIGNS,
  DISTSERVE_RATES_PER_GPU,
  distserveFleet,
} from '../../src/experiments/distserve.ts';
import { findExperiment } from '../../src/experiments/registry.ts';
import { renderReport } from '../../src/experiments/report.ts';
import { runCells } from '../../src/experiments/runner.ts';

test('distserve builds one cell per rate and design, its fleets on NVLink and across 25 Gbps', () => {
  const experiment = findExperiment('distserve');
  const cells = experiment.cells({ requests: 10, seed: 0 });
  assert.equal(cells.length, DISTSERVE_RATES_PER_GPU.length * DISTSERVE_DESIGNS.length);
  assert.deepEqual(
    cells.filter((c) => c.series === 'round-robin').map((c) => c.spec.rps),
    DISTSERVE_RATES_PER_GPU.map((x) => 3 * x),
  );
  for (const c of cells) assert.deepEqual(c.spec.slo, { ttft: 0.2, tpot: 0.1 });
  const nvlink = distserveFleet('nvlink');
  const ethernet = distserveFleet('ethernet-25g');
  assert.deepEqual(
    nvlink.instances.map((i) => i.role),
    ['prefill', 'prefill', 'decode'],
  );
  assert.equal(nvlink.nodeOf(0), nvlink.nodeOf(2));
  assert.equal(nvlink.nodeLink.class, 'nvlink');
  assert.notEqual(ethernet.nodeOf(0), ethernet.nodeOf(2));
  assert.equal(ethernet.network.class, 'ethernet-25g');
  assert.equal(
    experiment.cells({ requests: 10, seed: 0, only: ['least-load'] }).length,
    DISTSERVE_RATES_PER_GPU.length,
  );
});

test('distserve: the claims record has its three claims in the design shape (tiny run)', () => {
  const experiment = findExperiment('distserve');
  const results = runCells(experiment.cells({ requests: 30, seed: 1 }));
  const claims = experiment.claims?.(results);
  assert.ok(claims !== undefined);
  assert.deepEqual(
    claims.map((c) => c.id),
    ['fig1-per-gpu-goodput', 'table2-attainment-falls-first', 's6-kv-transfer-share'],
  );
  for (const c of claims) {
    assert.deepEqual(Object.keys(c).sort(), ['holds', 'id', 'measured', 'paper', 'source', 'statement']);
    for (const field of ['id', 'source', 'statement', 'paper', 'measured'] as const)
      assert.ok(c[field].length > 0, field);
    assert.equal(typeof c.holds, 'boolean');
  }
  const record = JSON.parse(JSON.stringify({ experiment: experiment.name, claims }));
  assert.equal(record.experiment, 'distserve');
  const { markdown } = renderReport(experiment, results, { command: 'preble experiment distserve' });
  assert.match(markdown, /## Claims/);
  assert.match(markdown, /## Goodput/);
  assert.match(markdown, /## KV transfer/);
});

test('experiments without claims state none (the CLI prints claims: [])', () => {
  assert.equal(findExperiment('ablation').claims, undefined);
});
