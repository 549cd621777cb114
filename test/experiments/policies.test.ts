import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  GRID_SIZES,
  LOADS,
  policies,
  SWEEP_MIN_SECONDS,
  SWEEP_RATES_PER_INSTANCE,
  saturationRate,
} from '../../src/experiments/policies.ts';
import { runCells } from '../../src/experiments/runner.ts';
import { createWorkload } from '../../src/workloads/registry.ts';
import { workingSet } from '../../src/workloads/working-set.ts';
import { shortened } from './shortened.ts';

const missing = {
  azureTrace: '/nonexistent/azure.csv',
  azureConvTrace: '/nonexistent/conv.csv',
  azureCodeTrace: '/nonexistent/code.csv',
};

test('the policies grid: every workload and mixed, three loads from the sweep, two sizes; Azure skipped with the reason when the trace is missing', () => {
  const only = ['e2-plus', 'round-robin'];
  const cells = policies.cells({ requests: 20, seed: 0, only, ...missing });
  // The five workloads and mixed, then sharegpt-like and conversation beyond the target (the Azure
  // traces are missing).
  assert.equal(cells.length, 8 * GRID_SIZES.length * LOADS.length * only.length);
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
  assert.match(text, /azure-code skipped: '\/nonexistent\/code.csv' not found \(pass --azure-code FILE\)/);
  assert.match(text, /mooncake skipped: no trace given \(pass --mooncake FILE/);
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

test('beyond the target: an Azure trace panel replays its rows (never more), counted in a claim of its own', () => {
  const dir = mkdtempSync(join(tmpdir(), 'policies-'));
  try {
    const rows = Array.from({ length: 60 }, (_, i) => {
      const t = new Date(Date.UTC(2023, 10, 16, 18, 0, 0) + i * 500)
        .toISOString()
        .replace('T', ' ')
        .replace('Z', '');
      return `${t},${200 + 10 * i},${5 + (i % 7)}`;
    });
    const code = join(dir, 'code.csv');
    writeFileSync(code, `TIMESTAMP,ContextTokens,GeneratedTokens\n${rows.join('\n')}\n`);
    const only = ['e2-plus', 'round-robin'];
    const cells = policies.cells({ requests: 20, seed: 0, only, ...missing, azureCodeTrace: code });
    const trace = cells.filter((c) => c.panel.startsWith('azure-code, 4 '));
    assert.equal(trace.length, LOADS.length * only.length);
    for (const c of trace) assert.equal([...c.spec.requests()].length, 60, 'every row, and no more');
    const sharegpt = cells
      .filter((c) => c.panel.startsWith('sharegpt-like, 4 '))
      .map((c) => shortened(c, 20));
    const results = runCells([...sharegpt, ...trace.map((c) => shortened(c, 20))]);
    const claims = policies.claims!(results);
    assert.equal(
      claims.find((c) => c.id === 'e2-plus-vs-anchors'),
      undefined,
      'no target panel ran',
    );
    const beyond = claims.find((c) => c.id === 'e2-plus-vs-anchors-beyond');
    assert.match(beyond?.measured ?? '', /^6 cells x \d+ anchors: won \d+, even \d+, lost \d+/);
    const text = policies.discuss(results);
    assert.match(text, /azure-code: every row of '.*code\.csv' \(60 requests/);
    assert.match(text, /Beyond the target/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('beyond the target: a Mooncake trace panel replays its rows with their block hashes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'policies-'));
  try {
    // 40 rows: five conversations of eight turns, each turn extending the last by one 512-token block.
    const rows = Array.from({ length: 40 }, (_, i) => {
      const conversation = i % 5;
      const turn = Math.floor(i / 5);
      const hashIds = Array.from({ length: turn + 1 }, (_, b) => conversation * 100 + b);
      return JSON.stringify({
        timestamp: i * 1000,
        input_length: 512 * (turn + 1),
        output_length: 20,
        hash_ids: hashIds,
      });
    });
    const file = join(dir, 'mooncake.jsonl');
    writeFileSync(file, `${rows.join('\n')}\n`);
    const only = ['e2-plus', 'round-robin'];
    const cells = policies.cells({ requests: 20, seed: 0, only, ...missing, mooncakeTrace: file });
    const trace = cells.filter((c) => c.panel.startsWith('mooncake, 4 '));
    assert.equal(trace.length, LOADS.length * only.length);
    const requests = [...trace[0]!.spec.requests()];
    assert.equal(requests.length, 40, 'every row, and no more');
    // A later turn's prompt begins with its conversation's earlier one (shared block hashes, shared tokens).
    const first = requests[0]!.tokens;
    const later = requests[5]!.tokens;
    assert.equal(later.length, 1024);
    assert.deepEqual([...later.subarray(0, 512)], [...first]);
    const text = policies.discuss(runCells(trace.slice(0, 2).map((c) => shortened(c, 20))));
    assert.match(text, /mooncake: every row of '.*mooncake\.jsonl' \(40 requests, a Mooncake-format trace/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the saturation sweep's runs last at least a minute of arrivals at every rate (a short run hides the queue)", () => {
  const asked: [number, number][] = [];
  const stream = (requests: number, rps: number, seed: number) => {
    asked.push([requests, rps]);
    return createWorkload('sharegpt-like', { requests: 4, rps, seed });
  };
  saturationRate(stream, 2, 0, 100);
  assert.equal(
    asked.length,
    SWEEP_RATES_PER_INSTANCE.length,
    'four requests never saturate: every rate runs',
  );
  for (const [requests, rps] of asked)
    assert.equal(requests, Math.max(100, Math.ceil(SWEEP_MIN_SECONDS * rps)));
});
