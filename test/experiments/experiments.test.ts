import assert from 'node:assert/strict';
import { test } from 'node:test';
import { idealHitRate } from '../../src/experiments/ideal-hit.ts';
import { findExperiment } from '../../src/experiments/registry.ts';
import { fixed } from '../../src/report/text-table.ts';
import { shortened } from './shortened.ts';

const req = (id: string, tokens: number[]) => ({
  id,
  arrival: 0,
  tokens: Uint32Array.from(tokens),
  outputTokens: 1,
  workload: 't',
});

test('the ideal hit rate counts each prompt tokens repeating an earlier prefix', () => {
  // 3 + 2 (shares [1,2]) + 3 (repeats [1,2,3]) of 3 + 4 + 3 tokens.
  const rate = idealHitRate([req('a', [1, 2, 3]), req('b', [1, 2, 9, 9]), req('c', [1, 2, 3])]);
  assert.equal(rate, (0 + 2 + 3) / 10);
});

test('experiments build their grids and unknown names are refused with the list', () => {
  const e2e = findExperiment('preble-e2e').cells({ requests: 10, seed: 0, only: ['e2', 'round-robin'] });
  assert.equal(e2e.length, 5 * 3 * 3 * 2); // workloads x clusters x rates x policies
  const ablation = findExperiment('ablation').cells({ requests: 10, seed: 0 });
  assert.equal(ablation.length, 3 * 5);
  assert.throws(
    () => findExperiment('nope'),
    /valid experiments: preble-e2e, ablation, azure-mixed, policies, distserve, splitwise, prefix-disagg, vidur-search, distserve-placement, schedulers, tetriinfer, aladdin$/,
  );
});

test('the Preble grids size each workload for its cluster and leave a warm-up out', () => {
  const cells = findExperiment('preble-e2e').cells({ requests: 50, seed: 0, only: ['e2'] });
  const toolbench = (instances: number) =>
    cells.find(
      (c) =>
        c.spec.workload === 'toolbench' && c.spec.instances === instances && c.spec.rps === 4 * instances,
    )!;
  const two = [...toolbench(2).spec.requests()];
  const four = [...toolbench(4).spec.requests()];
  assert.notDeepEqual(
    two.map((r) => r.tokens.length),
    four.map((r) => r.tokens.length),
  );
  // Every run lasts at least three of E2's windows (3 x 180 s of arrivals) and leaves the first out.
  for (const cell of cells) assert.equal(cell.spec.warmupSeconds, 180);
  assert.equal(two.length, Math.ceil(toolbench(2).spec.rps * 540));
});

test('a Preble report shows the working set against the fleet KV, and the warm-up', async () => {
  const { runCells } = await import('../../src/experiments/runner.ts');
  const { renderReport } = await import('../../src/experiments/report.ts');
  const experiment = findExperiment('ablation');
  const cells = experiment
    .cells({ requests: 40, seed: 0, only: ['round-robin', 'E2 exploit/explore'] })
    .map((c) => shortened(c, 40));
  const { markdown } = renderReport(experiment, runCells(cells), { command: 'test' });
  assert.match(markdown, /working set \/ fleet KV/);
  assert.match(markdown, /\| 816k \(4 x 204k\) \|/);
  assert.match(markdown, /Warm-up left out/);
});

test("preble-e2e: each panel's E2 over round robin beside round robin over the stream's latency floor", async () => {
  const { runCells } = await import('../../src/experiments/runner.ts');
  const { specFloor } = await import('../../src/experiments/latency-floor.ts');
  const experiment = findExperiment('preble-e2e');
  const cells = experiment
    .cells({ requests: 40, seed: 0, only: ['e2', 'round-robin'] })
    .filter((c) => c.panel === 'toolbench, 2 x Mistral-7B on A6000')
    .map((c) => shortened(c, 40));
  const results = runCells(cells);
  const top = Math.max(...results.map((r) => r.report.rps));
  const rr = results.find((r) => r.cell.series === 'round-robin' && r.report.rps === top)!;
  const row = experiment
    .discuss(results)
    .split('\n')
    .find((l) => l.startsWith(`| toolbench, 2 x Mistral-7B on A6000 @ ${top} rps |`))!;
  const cols = row.split('|').map((s) => s.trim());
  const e2 = results.find((r) => r.cell.series === 'e2' && r.report.rps === top)!;
  assert.equal(cols[2], `${fixed(rr.report.latency.mean / e2.report.latency.mean, 2)}x`);
  const ceiling = rr.report.latency.mean / specFloor(rr.cell.spec).latency.mean;
  assert.ok(ceiling >= 1, `${ceiling}`);
  assert.equal(Number(cols[4]!.replace('x', '')), Number(ceiling.toFixed(2)));
});
