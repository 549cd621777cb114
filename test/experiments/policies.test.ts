import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fleetFromFlag } from '../../src/cli/fleet-file.ts';
import {
  GRID_SIZES,
  LOADS,
  policies,
  SWEEP_MIN_SECONDS,
  SWEEP_RATES_PER_INSTANCE,
  saturationRate,
} from '../../src/experiments/policies.ts';
import { renderReport } from '../../src/experiments/report.ts';
import { runCells } from '../../src/experiments/runner.ts';
import type { CellResult } from '../../src/experiments/types.ts';
import { percentiles } from '../../src/report/stats.ts';
import { fleetRun } from '../../src/sim/run.ts';
import { createWorkload } from '../../src/workloads/registry.ts';
import { workingSet } from '../../src/workloads/working-set.ts';
import { shortened } from './shortened.ts';

const missing = {
  azureTrace: '/nonexistent/azure.csv',
  azureConvTrace: '/nonexistent/conv.csv',
  azureCodeTrace: '/nonexistent/code.csv',
};

/** An Azure-format trace of `rows` requests, 0.5 s apart, written into `dir`; its path. */
function azureTrace(dir: string, rows: number): string {
  const lines = Array.from({ length: rows }, (_, i) => {
    const t = new Date(Date.UTC(2023, 10, 16, 18, 0, 0) + i * 500)
      .toISOString()
      .replace('T', ' ')
      .replace('Z', '');
    return `${t},${200 + 10 * i},${5 + (i % 7)}`;
  });
  const path = join(dir, 'code.csv');
  writeFileSync(path, `TIMESTAMP,ContextTokens,GeneratedTokens\n${lines.join('\n')}\n`);
  return path;
}

/**
 * A made-up anchor's result: e2-plus's run `r` with each request's latency scaled (`scale(latency,
 * index)`), its mean and p99 recomputed, under the name `series`.
 */
function asAnchor(r: CellResult, series: string, scale: (x: number, i: number) => number): CellResult {
  const latency = r.steady!.latency.map(scale);
  return {
    ...r,
    cell: { ...r.cell, series },
    steady: { ids: r.steady!.ids, latency },
    report: { ...r.report, latency: { ...r.report.latency, ...percentiles(latency) } },
  };
}

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
  assert.match(text, /bailian skipped: no trace given \(pass --bailian FILE, e.g. Alibaba's Qwen-Bailian/);
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

test('a lost comparison carries the paired interval of the ratio it lost on, and the claims count the firm losses', () => {
  const cells = policies.cells({ requests: 20, seed: 0, only: ['e2-plus'], ...missing });
  const [subject] = runCells([shortened(cells.find((c) => c.panel.startsWith('toolbench, 4 '))!, 40)]);
  assert.ok(subject?.steady !== undefined && subject.steady.latency.length > 0);
  // An anchor that ran every request of the same stream in 80% of e2-plus's time: lost on mean and
  // p99 by 20%, and not by a draw of requests.
  const n = subject.steady.latency.length;
  const anchor = asAnchor(subject, 'cache-aware', (x) => 0.8 * x);
  const text = policies.discuss([subject, anchor]);
  assert.match(
    text,
    new RegExp(
      `\\| cache-aware \\| warm-up left out \\| 0\\.8 / 0\\.8 \\| mean 0\\.8-0\\.8, n ${n} \\(\\*\\*firm\\*\\*\\); p99 0\\.8-0\\.8, n ${n} \\(\\*\\*firm\\*\\*\\) \\|`,
    ),
  );
  const firm =
    /lost firmly \(the lost ratio's 95% paired-bootstrap interval over requests entirely below 0\.98\): (\d) of 1$/;
  const claim = policies.claims!([subject, anchor]).find((c) => c.id === 'e2-plus-vs-anchors');
  assert.equal(firm.exec(claim!.measured)?.[1], '1', claim!.measured);
  // The same anchor, but only the slowest request faster: lost, not firmly (a draw of requests without
  // it, about a third of them, gives a ratio of 1). Asked after the first, under the same name: the
  // intervals of one pair of results are not another's.
  const slowest = subject.steady.latency.indexOf(Math.max(...subject.steady.latency));
  const lucky = asAnchor(subject, 'cache-aware', (x, i) => (i === slowest ? 0.5 * x : x));
  const luckyClaim = policies.claims!([subject, lucky]).find((c) => c.id === 'e2-plus-vs-anchors');
  assert.match(luckyClaim!.measured, /lost 1 /);
  assert.equal(firm.exec(luckyClaim!.measured)?.[1], '0', luckyClaim!.measured);
});

test("repeats: every cell runs on consecutive seeds at the first seed's rates, a replayed trace once; the verdict pools the seeds request by request", () => {
  const dir = mkdtempSync(join(tmpdir(), 'policies-'));
  try {
    const code = azureTrace(dir, 30);
    const only = ['e2-plus'];
    const cells = policies.cells({
      requests: 20,
      seed: 4,
      repeats: 3,
      only,
      ...missing,
      azureCodeTrace: code,
    });
    const toolbench = cells.filter((c) => c.panel.startsWith('toolbench, 4 '));
    assert.equal(toolbench.length, LOADS.length * 3);
    for (const rps of new Set(toolbench.map((c) => c.spec.rps))) {
      const runs = toolbench.filter((c) => c.spec.rps === rps);
      assert.deepEqual(
        runs.map((c) => [c.repeat, c.spec.seed]),
        [
          [0, 4],
          [1, 5],
          [2, 6],
        ],
      );
      // Each seed draws its own workload.
      const first = (c: (typeof runs)[number]) => [...c.spec.requests()][0]!.tokens.join(',');
      assert.notEqual(first(runs[0]!), first(runs[1]!));
    }
    const trace = cells.filter((c) => c.panel.startsWith('azure-code, 4 '));
    assert.equal(trace.length, LOADS.length, 'a replayed trace runs once');
    assert.ok(trace.every((c) => c.repeat === 0 && c.spec.seed === 4));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  // The verdict: e2-plus on seeds 0 and 1 against an anchor that is 10% faster on seed 0's runs and
  // 10% slower on seed 1's. Each seed alone loses one and wins one; pooled, the cell is even or won.
  const cells = policies.cells({ requests: 20, seed: 0, repeats: 2, only: ['e2-plus'], ...missing });
  const light = cells.filter(
    (c) =>
      c.panel.startsWith('toolbench, 4 ') &&
      c.spec.rps === Math.min(...cells.filter((x) => x.panel === c.panel).map((x) => x.spec.rps)),
  );
  const runs = runCells(light.map((c) => shortened(c, 40)));
  assert.deepEqual(
    runs.map((r) => r.cell.repeat),
    [0, 1],
  );
  const results = [
    ...runs,
    asAnchor(runs[0]!, 'cache-aware', (x) => 0.9 * x),
    asAnchor(runs[1]!, 'cache-aware', (x) => 1.1 * x),
  ];
  const claim = policies.claims!(results).find((c) => c.id === 'e2-plus-vs-anchors')!;
  assert.match(claim.statement, /over seeds 0, 1 pooled request by request/);
  assert.match(claim.measured, /each seed alone \(0, 1\): lost 1 \/ 0$/);
  const pooled = /won (\d+), even (\d+), lost (\d+)/.exec(claim.measured)!.map(Number);
  assert.equal(pooled[3], 0, claim.measured);
  const text = policies.discuss(results);
  assert.match(text, /Every cell runs on 2 seeds \(0, 1\)/);
  assert.match(text, /\| 0 \| 0 \/ 0 \/ 1 \| 0 \/ 0 \/ 0 \|/);
  // Seed 0 alone lost firmly; pooled, nothing is lost (no pooled row).
  assert.match(
    text,
    /\| cache-aware \| seed 0 \| 0\.9 \/ 0\.9 \| mean 0\.9-0\.9, n \d+ \(\*\*firm\*\*\); p99 0\.9-0\.9, n \d+ \(\*\*firm\*\*\) \|/,
  );
  assert.doesNotMatch(text, /\| cache-aware \| 2 seeds pooled \|/);
});

test('beyond the target: an Azure trace panel replays its rows (never more), counted in a claim of its own', () => {
  const dir = mkdtempSync(join(tmpdir(), 'policies-'));
  try {
    const code = azureTrace(dir, 60);
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
    // The same conversations as a Qwen-Bailian trace: seconds, 16-token blocks (32 per 512 tokens).
    const bailianRows = rows.map((text) => {
      const r = JSON.parse(text) as { timestamp: number; input_length: number; hash_ids: number[] };
      const blocks = r.hash_ids.flatMap((id) => Array.from({ length: 32 }, (_, k) => id * 32 + k));
      return JSON.stringify({ ...r, timestamp: r.timestamp / 1000, hash_ids: blocks, turn: 1 });
    });
    const bailianFile = join(dir, 'bailian.jsonl');
    writeFileSync(bailianFile, `${bailianRows.join('\n')}\n`);
    const bailian = policies
      .cells({ requests: 20, seed: 0, only, ...missing, bailianTrace: bailianFile })
      .filter((c) => c.panel.startsWith('bailian, 4 '));
    assert.equal(bailian.length, LOADS.length * only.length);
    const replayed = [...bailian[0]!.spec.requests()];
    assert.equal(replayed.length, 40);
    assert.deepEqual([...replayed[5]!.tokens.subarray(0, 512)], [...replayed[0]!.tokens]);
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

test('--fleet: the grid runs on the given fleet, one size, its panels named for it; the paper claim is left out', () => {
  const fleet = fleetFromFlag('examples/fleets/mixed-a6000-h100.yaml', 'mistral-7b-a6000');
  const only = ['e2-plus', 'round-robin', 'e2'];
  const cells = policies.cells({
    requests: 20,
    seed: 0,
    only,
    ...missing,
    fleet: { label: 'mixed-a6000-h100', fleet },
  });
  // The five workloads and mixed, sharegpt-like and conversation: one size (the fleet's), three loads.
  assert.equal(cells.length, 8 * LOADS.length * only.length);
  for (const c of cells) {
    assert.match(c.panel, /, mixed-a6000-h100$/);
    assert.deepEqual(
      c.spec.fleet?.map((i) => i.costModel),
      ['mistral-7b-a6000', 'mistral-7b-a6000', 'llama2-7b-h100', 'llama2-7b-h100'],
    );
    assert.equal(c.spec.instances, 4);
  }
  // The sweep runs on the fleet: round robin's latency at the lowest rate is lower with two H100s.
  const toolbench = (requests: number, rps: number, seed: number, instances: number) =>
    createWorkload('toolbench', { requests, rps, seed, instances });
  const onFleet = saturationRate(toolbench, 4, 0, 20, undefined, fleetRun(fleet)).reference;
  const onA6000 = saturationRate(toolbench, 4, 0, 20).reference;
  assert.ok(onFleet < onA6000, `${onFleet} < ${onA6000}`);
  const some = cells.filter((c) => c.panel.startsWith('toolbench, ')).map((c) => shortened(c, 30));
  const results = runCells(some);
  assert.match(
    policies.discuss(results),
    /Fleet: 2 x mistral-7b-a6000 \+ 2 x llama2-7b-h100 \(each instance runs its own preset/,
  );
  // The working-set table counts each instance's own KV.
  assert.match(
    renderReport(policies, results, { command: 'test' }).markdown,
    /\| 619k \(2 x 204k \+ 2 x 105k\) \| [\d.]+ \| [\d.]+-[\d.]+ \|/,
  );
  const claims = policies.claims!(results).map((c) => c.id);
  assert.ok(claims.includes('e2-plus-vs-anchors'));
  assert.ok(!claims.includes('e2-vs-round-robin'), "a fleet of mixed GPUs is not the paper's setup");
  assert.throws(
    () =>
      policies.cells({
        requests: 20,
        seed: 0,
        only,
        ...missing,
        fleet: { label: 'pd', fleet: fleetFromFlag('2P1D', 'mistral-7b-a6000') },
      }),
    /^Error: --fleet: the policies grid runs colocated policies; instance 0 is prefill \(every instance must be mixed\)$/,
  );
});

test("the paper's comparison: E2 over round robin per medium and heavy cell, beside round robin over the stream's latency floor", () => {
  const cells = policies
    .cells({ requests: 20, seed: 0, only: ['e2', 'round-robin'], ...missing })
    .filter((c) => c.panel.startsWith('toolbench, 4 ') && (c.repeat ?? 0) === 0)
    .map((c) => shortened(c, 40));
  const results = runCells(cells);
  const claim = policies.claims!(results).find((c) => c.id === 'e2-vs-round-robin')!;
  // Two cells (medium and heavy; light is not the paper's setup), each with its floor.
  assert.match(
    claim.measured,
    /round robin \/ e2: [\d.]+x-[\d.]+x mean, [\d.]+x-[\d.]+x p99; \d of 2 cells within the paper's mean range \(\d below it, \d above\); round robin \/ latency floor, the most any placement could gain: [\d.]+x-[\d.]+x/,
  );
  const text = policies.discuss(results);
  const rows = text.split('\n').filter((l) => /^\| toolbench, 4 .* \((medium|heavy)\) \|/.test(l));
  assert.equal(rows.length, 2, text);
  for (const row of rows) {
    const cols = row.split('|').map((s) => s.trim());
    const [rrMean, e2Mean, floorMean] = [cols[2]!, cols[3]!, cols[4]!].map((x) => Number(x.split(' / ')[0]));
    assert.ok(floorMean! > 0 && floorMean! <= rrMean! && floorMean! <= e2Mean!, row);
    assert.equal(Number(cols[6]!.replace('x', '')).toFixed(1), (rrMean! / floorMean!).toFixed(1), row);
  }
  assert.match(
    text,
    /Checked on these runs: \d+ of\s+\d+ requests of E2 and round robin finished below their floor/,
  );
});
