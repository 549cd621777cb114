import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GRID_SIZES, LOADS, policies } from '../../src/experiments/policies.ts';
import { runCells } from '../../src/experiments/runner.ts';
import { workingSet } from '../../src/workloads/working-set.ts';
import { shortened } from './shortened.ts';

test('the policies grid: every workload and mixed, three loads from the sweep, two sizes; Azure skipped with the reason when the trace is missing', () => {
  const only = ['e2-plus', 'round-robin'];
  const cells = policies.cells({ requests: 20, seed: 0, only, azureTrace: '/nonexistent/azure.csv' });
  assert.equal(cells.length, 6 * GRID_SIZES.length * LOADS.length * only.length);
  for (const panel of new Set(cells.map((c) => c.panel))) {
    const rates = [...new Set(cells.filter((c) => c.panel === panel).map((c) => c.spec.rps))].sort(
      (a, b) => a - b,
    );
    assert.equal(rates.length, 3, `${panel}: light, medium, heavy`);
    assert.ok(
      Math.abs(rates[1]! - 2 * rates[0]!) < 0.02 && Math.abs(rates[2]! - 2 * rates[1]!) < 0.02,
      `${rates}`,
    );
  }
  // Every run lasts at least three windows (3 x 180 s of arrivals) and leaves the first out.
  for (const cell of cells) assert.equal(cell.spec.warmupSeconds, 180);
  const heavy = cells.find(
    (c) =>
      c.panel.startsWith('toolbench, 4 ') &&
      c.spec.rps === Math.max(...cells.filter((x) => x.panel === c.panel).map((x) => x.spec.rps)),
  )!;
  assert.equal([...heavy.spec.requests()].length, Math.ceil(heavy.spec.rps * 540));
  // Working sets scale with the cluster: the 8-instance panels' streams hold more distinct prefixes.
  const sized = (panel: string) =>
    workingSet([...cells.find((c) => c.panel.startsWith(panel))!.spec.requests()].slice(0, 2000)).peakTokens;
  assert.ok(sized('toolbench, 8 ') > sized('toolbench, 4 '), `${sized('toolbench, 8 ')}`);
  // The runs themselves, shortened to keep the test small (the first 30 requests, a 1 s warm-up).
  const some = cells.filter((c) => c.panel.startsWith('toolbench, 4 ')).map((c) => shortened(c, 30));
  const results = runCells(some);
  for (const r of results) {
    // The whole-run view (every request, the warm-up included) rides along with the steady one.
    assert.ok(r.report.warmup !== undefined && r.report.warmup.excluded > 0);
    assert.ok(r.report.warmup.wholeRunLatency.mean > 0);
  }
  const text = policies.discuss(results);
  assert.match(text, /mixed@azure .* skipped: '\/nonexistent\/azure.csv' not found/);
  assert.match(text, /\| round-robin \| \d+ \| \d+ \| \d+ \|/);
  const claims = policies.claims!(results);
  const vsAnchors = claims.find((c) => c.id === 'e2-plus-vs-anchors');
  assert.ok(vsAnchors !== undefined);
  const [, won, even, lost] = /won (\d+), even (\d+), lost (\d+)/.exec(vsAnchors.measured)!.map(Number);
  assert.equal(won! + even! + lost!, 3, 'three cells against one anchor');
  assert.equal(vsAnchors.holds, lost === 0);
  const wholeRun = claims.find((c) => c.id === 'e2-plus-vs-anchors-whole-run');
  assert.match(wholeRun?.measured ?? '', /3 cells x \d+ anchors: won \d+, even \d+, lost \d+/);
  assert.match(text, /\| round-robin \| \d+ \| \d+ \| \d+ \| .* \| \d+ \/ \d+ \/ \d+ \|$/m);
});
