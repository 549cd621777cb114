import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { presetNames } from '../../src/core/cost-model/presets.ts';
import { globalPolicyNames } from '../../src/core/policies/registry.ts';
import { queuePolicyNames } from '../../src/core/replica-queue/registry.ts';
import { workloadNames } from '../../src/workloads/registry.ts';
import { runCli } from './run-cli.ts';

const PERCENTILES = ['mean', 'p50', 'p90', 'p99'];

function assertContract(r: Record<string, unknown>): void {
  for (const key of [
    'policy',
    'workload',
    'instances',
    'rps',
    'requests',
    'completed',
    'cacheHitRate',
    'throughputRps',
  ]) {
    assert.ok(key in r, `missing ${key}`);
  }
  for (const key of ['latency', 'ttft', 'tpot']) {
    for (const p of PERCENTILES)
      assert.equal(typeof (r[key] as Record<string, number>)[p], 'number', `${key}.${p}`);
  }
  const per = r['perInstance'] as { requests: number; busyFraction: number; cacheHitRate: number }[];
  assert.equal(per.length, r['instances']);
  for (const i of per) {
    assert.ok(i.busyFraction >= 0 && i.busyFraction <= 1);
    assert.ok(i.cacheHitRate >= 0 && i.cacheHitRate <= 1);
  }
  assert.equal(
    per.reduce((s, i) => s + i.requests, 0),
    r['requests'],
  );
}

test('preble sim --json prints the contract object for one policy and {results} for a list', async () => {
  const one = await runCli([
    'sim',
    '--workload',
    'toolbench',
    '--instances',
    '2',
    '--rps',
    '4',
    '--requests',
    '120',
    '--policy',
    'e2',
    '--json',
  ]);
  assert.equal(one.code, 0, one.stderr);
  const r = JSON.parse(one.stdout) as Record<string, unknown>;
  assertContract(r);
  assert.equal(r['policy'], 'e2');
  assert.equal(r['completed'], 120);
  const many = await runCli([
    'sim',
    '--workload',
    'toolbench',
    '--instances',
    '2',
    '--rps',
    '4',
    '--requests',
    '120',
    '--policy',
    'e2,round-robin',
    '--json',
  ]);
  assert.equal(many.code, 0, many.stderr);
  const results = (JSON.parse(many.stdout) as { results: Record<string, unknown>[] }).results;
  assert.deepEqual(
    results.map((x) => x['policy']),
    ['e2', 'round-robin'],
  );
  for (const x of results) assertContract(x);
});

test('preble sim --out writes JSON, per-request CSV and plots', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'preble-sim-'));
  const r = await runCli([
    'sim',
    '--workload',
    'video-qa',
    '--instances',
    '2',
    '--rps',
    '1,2',
    '--requests',
    '40',
    '--policy',
    'e2',
    '--out',
    dir,
  ]);
  assert.equal(r.code, 0, r.stderr);
  const files = readdirSync(dir).sort();
  for (const f of ['latency.png', 'latency.svg', 'results.json', 'ttft.png', 'ttft.svg'])
    assert.ok(files.includes(f), f);
  const csv = readFileSync(join(dir, 'requests-e2@1.csv'), 'utf8').trim().split('\n');
  assert.equal(csv.length, 41);
  assert.match(csv[0]!, /^id,workload,instance,branch,arrival/);
});

test('preble sim --baseline compares one policy with each other one, paired, with intervals', async () => {
  const args = ['sim', '--workload', 'toolbench', '--instances', '2', '--rps', '2,4', '--requests', '150'];
  const json = await runCli([...args, '--policy', 'e2,round-robin,random', '--baseline', 'e2', '--json']);
  assert.equal(json.code, 0, json.stderr);
  const out = JSON.parse(json.stdout) as {
    results: Record<string, unknown>[];
    comparisons: {
      baseline: string;
      policy: string;
      rps: number;
      n: number;
      mean: { ratio: number; lo: number; hi: number; standing: string; firm: boolean };
      p99: { ratio: number; lo: number; hi: number; standing: string; firm: boolean };
      p50: number;
      p90: number;
      p95: number;
    }[];
  };
  assert.equal(out.results.length, 6);
  assert.deepEqual(
    out.comparisons.map((c) => `${c.baseline}:${c.policy}@${c.rps}`),
    ['e2:round-robin@2', 'e2:random@2', 'e2:round-robin@4', 'e2:random@4'],
  );
  for (const c of out.comparisons) {
    assert.equal(c.n, 150);
    const rr = out.results.find((r) => r['policy'] === c.policy && r['rps'] === c.rps)!;
    const e2 = out.results.find((r) => r['policy'] === 'e2' && r['rps'] === c.rps)!;
    const latency = (r: Record<string, unknown>) =>
      r['latency'] as Record<'mean' | 'p50' | 'p90' | 'p99', number>;
    // Every request completed in both runs: the paired ratios are the reports' ratios.
    for (const [ratio, stat] of [
      [c.mean.ratio, 'mean'],
      [c.p50, 'p50'],
      [c.p90, 'p90'],
      [c.p99.ratio, 'p99'],
    ] as const) {
      assert.ok(Math.abs(ratio - latency(rr)[stat] / latency(e2)[stat]) < 1e-9, `${stat}: ${ratio}`);
    }
    assert.ok(c.mean.lo <= c.mean.ratio && c.mean.ratio <= c.mean.hi);
    const expected = c.p99.ratio > 1.02 ? 'ahead' : c.p99.ratio < 0.98 ? 'behind' : 'even';
    assert.equal(c.p99.standing, expected);
  }
  const text = await runCli([...args, '--policy', 'e2,round-robin', '--baseline', 'e2']);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /e2 against each policy: .*95% paired-bootstrap interval/);
  assert.match(text.stdout, /^round-robin\s+2\s+\d/m);
});

test('preble sim rejects bad input with one line', async () => {
  for (const [args, reason] of [
    [['sim', '--workload', 'nope'], /unknown|valid/],
    [['sim', '--workload', 'toolbench', '--rps', '0'], /positive/],
    [['sim', '--workload', 'toolbench', '--queue-policy', 'nope'], /unknown queue policy/],
    [['sim', '--workload', 'azure:/no/such/file.csv'], /no\/such|not found|ENOENT|cannot/i],
    [['sim'], /required option/],
    [
      ['sim', '--workload', 'toolbench', '--policy-option', 'e2.autoscale=false'],
      /renamed 'prefixReplication'/,
    ],
    [['sim', '--workload', 'toolbench', '--policy-option', 'e2.bogus=1'], /unknown e2 option 'bogus'/],
    [
      ['sim', '--workload', 'toolbench', '--policy', 'round-robin', '--policy-option', 'e2.rebalance=false'],
      /not in --policy/,
    ],
    [
      ['sim', '--workload', 'toolbench', '--policy', 'e2,random', '--baseline', 'e2-plus'],
      /--baseline e2-plus: not in --policy/,
    ],
    [['sim', '--workload', 'toolbench', '--policy', 'e2', '--baseline', 'e2'], /at least one other policy/],
    [
      ['sim', '--workload', 'toolbench', '--policy', 'e2,e2', '--baseline', 'e2'],
      /at least one other policy/,
    ],
  ] as const) {
    const r = await runCli(args);
    assert.notEqual(r.code, 0, args.join(' '));
    assert.match(r.stderr, reason);
    assert.doesNotMatch(r.stderr, /\n\s+at /);
  }
});

test('preble sim --help lists policies, queue policies, presets and workloads from the registries', async () => {
  const r = await runCli(['sim', '--help']);
  assert.equal(r.code, 0);
  const named = presetNames().filter((n) => !n.startsWith('roofline:'));
  for (const name of [...globalPolicyNames, ...queuePolicyNames, ...named, ...workloadNames]) {
    assert.match(r.stdout, new RegExp(`\\n  ${name}: `), name);
  }
  assert.match(r.stdout, /roofline:MODEL@GPU\[xTP\]/);
});

test('preble sim --policy-option sets an option of one policy', async () => {
  const args = [
    'sim',
    '--workload',
    'programming:order=bursts,demo=680,maxOutput=8192',
    '--requests',
    '300',
    '--rps',
    '12',
    '--policy',
    'e2',
    '--json',
  ];
  const plain = JSON.parse((await runCli(args)).stdout);
  const basic = JSON.parse(
    (await runCli([...args, '--policy-option', 'e2.phaseMix=false', '--policy-option', 'e2.rebalance=false']))
      .stdout,
  );
  assert.ok((plain.branches['phase-mix'] ?? 0) > 0, 'phase-mix balancing fires by default here');
  assert.equal(basic.branches['phase-mix'], undefined);
});

test('preble sim --goodput searches the highest rate meeting the SLOs, per policy', async () => {
  const args = [
    'sim',
    '--workload',
    'toolbench',
    '--requests',
    '120',
    '--rps',
    '2',
    '--policy',
    'e2,round-robin',
  ];
  const slo = ['--slo-ttft', '1', '--slo-tpot', '0.1', '--goodput', '0.9', '--json'];
  const r = await runCli([...args, ...slo]);
  assert.equal(r.code, 0, r.stderr);
  const { results } = JSON.parse(r.stdout);
  assert.deepEqual(
    results.map((x: { policy: string }) => x.policy),
    ['e2', 'round-robin'],
  );
  for (const x of results) {
    assert.ok(x.goodputRps >= 2 && x.bracketed, JSON.stringify(x));
    const passing = x.probes.filter((p: { attainment: number }) => p.attainment >= 0.9);
    assert.equal(Math.max(...passing.map((p: { rps: number }) => p.rps)), x.goodputRps);
    assert.ok(
      x.probes.some((p: { rps: number; attainment: number }) => p.rps > x.goodputRps && p.attainment < 0.9),
    );
  }
  assert.deepEqual(JSON.parse((await runCli([...args, ...slo])).stdout), { results }, 'deterministic');
});

test('preble sim --fleet: 4M is --instances 4; a file of instances with their own presets runs and counts GPUs', async () => {
  const base = [
    'sim',
    '--workload',
    'toolbench',
    '--requests',
    '200',
    '--rps',
    '6',
    '--policy',
    'e2',
    '--json',
  ];
  const fleet = JSON.parse((await runCli([...base, '--fleet', '4M'])).stdout);
  const plain = JSON.parse((await runCli([...base, '--instances', '4'])).stdout);
  assert.equal(fleet.gpus, 4);
  // A fleet also reports its price: four A6000s at their listed $0.80 (gpu-shapes.ts).
  const { gpus: _gpus, costPerHour, ...rest } = fleet;
  assert.ok(Math.abs(costPerHour - 4 * 0.8) < 1e-9, String(costPerHour));
  assert.deepEqual(rest, plain);
  const dir = mkdtempSync(join(tmpdir(), 'preble-fleet-'));
  const file = join(dir, 'fleet.yaml');
  writeFileSync(
    file,
    'instances:\n  - { model: mistral-7b-a6000, count: 2 }\n  - { model: llama2-7b-h100, count: 1, pricePerHour: 4.75 }\n',
  );
  const mixed = await runCli([...base, '--fleet', file]);
  assert.equal(mixed.code, 0, mixed.stderr);
  const report = JSON.parse(mixed.stdout);
  assert.equal(report.instances, 3);
  assert.equal(report.perInstance.length, 3);
  assert.equal(report.gpus, 3);
  // Two A6000s at their listed $0.80 (gpu-shapes.ts) and the H100 at the spec's price.
  assert.ok(Math.abs(report.costPerHour - (2 * 0.8 + 4.75)) < 1e-9, String(report.costPerHour));
});

test('preble sim with SLOs shows the share meeting them in its table', async () => {
  const args = ['sim', '--workload', 'toolbench', '--requests', '100', '--rps', '4', '--policy', 'e2'];
  const plain = await runCli(args);
  assert.doesNotMatch(plain.stdout, /slo met/);
  const withSlo = await runCli([...args, '--slo-ttft', '1', '--slo-tpot', '0.1']);
  assert.match(withSlo.stdout, /slo met\n[- ]+\ne2 .* (0|1)\.?\d*\n?$/);
});

test('preble sim --fleet 2P1D --policy splitwise: pairs chosen at arrival, layer-wise KV for 1024-token prompts, transfer and GPUs reported', async () => {
  const run = await runCli([
    'sim',
    '--fleet',
    '2P1D',
    '--policy',
    'splitwise',
    '--workload',
    'synthetic:in=1024,out=64',
    '--rps',
    '2',
    '--requests',
    '200',
    '--json',
  ]);
  assert.equal(run.code, 0, run.stderr);
  const report = JSON.parse(run.stdout);
  assert.equal(report.completed, 200);
  assert.equal(report.gpus, 3);
  assert.equal(report.queuePolicy, 'fcfs');
  assert.deepEqual(report.branches, { 'prompt-token-pair': 200 });
  for (const key of ['mean', 'p50', 'p90', 'p99']) assert.ok(report.transfer[key] > 0, `transfer.${key}`);
  assert.ok(report.ttft.mean > 0 && report.tpot.mean > 0);
});

test('preble sim --fleet 2P1D --policy distserve: a disaggregated run reports transfer and GPUs; a colocated policy fails with one line', async () => {
  const base = [
    'sim',
    '--fleet',
    '2P1D',
    '--workload',
    'synthetic:in=512,out=64',
    '--rps',
    '2',
    '--requests',
    '100',
    '--json',
  ];
  const run = await runCli([...base, '--policy', 'distserve']);
  assert.equal(run.code, 0, run.stderr);
  const report = JSON.parse(run.stdout);
  assert.equal(report.completed, 100);
  assert.equal(report.gpus, 3);
  assert.equal(report.queuePolicy, 'fcfs');
  assert.deepEqual(report.branches, { 'prefill-shortest-queue': 100 });
  for (const key of ['mean', 'p50', 'p90', 'p99']) assert.ok(report.transfer[key] > 0, `transfer.${key}`);
  assert.deepEqual(Object.keys(report.stages), [
    'prefillQueue',
    'prefill',
    'transferWait',
    'transfer',
    'decodeQueue',
    'decode',
  ]);
  assert.equal(report.stages.transfer.p99, report.transfer.p99);
  assert.ok(report.stages.prefill.mean > 0 && report.stages.decode.mean > 0);
  const table = await runCli(base.filter((a) => a !== '--json').concat(['--policy', 'distserve']));
  assert.match(table.stdout, /tpot mean s +xfer p99 s +hit rate/);
  assert.ok(report.ttft.mean > 0 && report.tpot.mean > 0);
  const colocated = await runCli([...base, '--policy', 'e2']);
  assert.notEqual(colocated.code, 0);
  assert.match(
    colocated.stderr,
    /policy e2 places requests colocated; a fleet with prefill and decode instances needs a disaggregated policy: distserve, splitwise, prefix-pd[a-z, -]*\n$/,
  );
  const plain = JSON.parse(
    (await runCli(['sim', '--workload', 'toolbench', '--requests', '50', '--json'])).stdout,
  );
  assert.equal(plain.transfer, undefined, 'no transfer figures without disaggregated requests');
  assert.equal(plain.stages, undefined, 'no stages without disaggregated requests');
});

test('preble sim --goodput on a fleet reports goodput per GPU', async () => {
  const r = await runCli([
    'sim',
    '--fleet',
    '1P1D',
    '--policy',
    'distserve',
    '--workload',
    'synthetic:in=256,out=16',
    '--requests',
    '100',
    '--rps',
    '1',
    '--slo-ttft',
    '0.5',
    '--slo-tpot',
    '0.1',
    '--goodput',
    '0.9',
    '--json',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const [result] = JSON.parse(r.stdout).results;
  assert.equal(result.gpus, 2);
  assert.ok(result.goodputRps >= 1);
  assert.equal(result.goodputPerGpu, result.goodputRps / 2);
});

test('preble sim replays a trace at its own timing without --rps, and re-times it with one', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'preble-sim-trace-'));
  const trace = join(dir, 'trace.jsonl');
  // Six one-block requests two seconds apart: a mean rate of 0.5 requests/s.
  const rows = [0, 1, 2, 3, 4, 5].map((k) =>
    JSON.stringify({ timestamp: 2000 * k, input_length: 512, output_length: 4, hash_ids: [k] }),
  );
  writeFileSync(trace, `${rows.join('\n')}\n`);
  const arrivals = (csvPath: string) => {
    const [head, ...lines] = readFileSync(csvPath, 'utf8').trim().split('\n');
    const at = head!.split(',').indexOf('arrival');
    return lines.map((l) => Number(l.split(',')[at])).sort((a, b) => a - b);
  };
  const base = ['sim', '--workload', `mooncake:${trace}`, '--requests', '6', '--policy', 'round-robin'];

  const own = await runCli([...base, '--json', '--out', join(dir, 'own')]);
  assert.equal(own.code, 0, own.stderr);
  assert.equal(JSON.parse(own.stdout).rps, 0.5);
  assert.deepEqual(arrivals(join(dir, 'own', 'requests-round-robin@0.5.csv')), [0, 2, 4, 6, 8, 10]);

  const retimed = await runCli([...base, '--rps', '5', '--json', '--out', join(dir, 'retimed')]);
  assert.equal(retimed.code, 0, retimed.stderr);
  assert.equal(JSON.parse(retimed.stdout).rps, 5);
  const fast = arrivals(join(dir, 'retimed', 'requests-round-robin@5.csv'));
  assert.deepEqual(
    fast.map((t) => Math.round(t * 1000) / 1000),
    [0, 0.2, 0.4, 0.6, 0.8, 1],
  );

  // Rows that all arrive at once have no rate of their own: a one-line reason, not a run.
  const burst = join(dir, 'burst.jsonl');
  writeFileSync(burst, `${rows.map((r) => r.replace(/"timestamp": ?\d+/, '"timestamp":7')).join('\n')}\n`);
  const none = await runCli(['sim', '--workload', `mooncake:${burst}`, '--requests', '6']);
  assert.notEqual(none.code, 0);
  assert.match(none.stderr, /6 rows arrive at one instant, so it has no rate/);
  assert.equal(none.stderr.trim().split('\n').length, 1, none.stderr);

  // A file with no rows (blank lines only) says so (before: "its 0 rows arrive at one instant").
  const empty = join(dir, 'empty.jsonl');
  writeFileSync(empty, '\n\n');
  const nothing = await runCli(['sim', '--workload', `mooncake:${empty}`]);
  assert.notEqual(nothing.code, 0);
  assert.equal(nothing.stderr.trim(), `preble: mooncake:${empty}: the trace has no rows`);
});

/** A Mooncake trace of rows of these prompt lengths (whole 512-token blocks, none shared), a second apart. */
function mooncakeRows(prefix: string, lengths: readonly number[]): string {
  const trace = join(mkdtempSync(join(tmpdir(), prefix)), 'trace.jsonl');
  const rows = lengths.map((tokens, k) =>
    JSON.stringify({
      timestamp: 1000 * k,
      input_length: tokens,
      output_length: 4,
      hash_ids: Array.from({ length: tokens / 512 }, (_, b) => 1000 * k + b),
    }),
  );
  writeFileSync(trace, `${rows.join('\n')}\n`);
  return trace;
}

test('preble sim: an instance too small for a row refuses it and a larger one serves it, said under the table', async () => {
  // The mixed fleet lists 2 A6000 instances (204,072 KV tokens) then 2 H100 ones (105,366): round
  // robin sends row 3, 150,016 tokens, to an H100 instance first.
  const trace = mooncakeRows('preble-sim-rerouted-', [512, 512, 512, 150_016]);
  const base = ['sim', '--workload', `mooncake:${trace}`, '--requests', '4'];
  const fleet = ['--fleet', 'examples/fleets/mixed-a6000-h100.yaml', '--policy', 'round-robin'];
  const json = await runCli([...base, ...fleet, '--json']);
  assert.equal(json.code, 0, json.stderr);
  const report = JSON.parse(json.stdout);
  // Before: refused (3 of 4 completed).
  assert.deepEqual(
    [report.requests, report.completed, report.refused, report.rerouted],
    [4, 4, undefined, 1],
  );
  const text = await runCli([...base, ...fleet]);
  assert.equal(text.code, 0, text.stderr);
  assert.match(
    text.stdout,
    /served by a larger instance after one too small for them refused them: 1 of 4 requests in every run/,
  );
});

test('preble sim refuses a trace row too large for any instance, says so under the table, and runs the rest', async () => {
  // Row 2 needs 2,048 + 3 KV tokens; each instance holds 1,500.
  const trace = mooncakeRows('preble-sim-refused-', [512, 512, 2048, 512]);
  const base = ['sim', '--workload', `mooncake:${trace}`, '--requests', '4', '--kv-tokens', '1500'];
  const json = await runCli([...base, '--json']);
  assert.equal(json.code, 0, json.stderr);
  const report = JSON.parse(json.stdout);
  assert.deepEqual([report.requests, report.completed, report.refused], [4, 3, 1]);
  const text = await runCli([...base, '--policy', 'round-robin,e2-plus']);
  assert.equal(text.code, 0, text.stderr);
  assert.match(
    text.stdout,
    /refused, their prompt and output larger than the KV of every instance or of every one the policy would pick \(left out of every figure above\): 1 of 4 requests in every run/,
  );
});

test("preble sim --floor: each run's latency floor beside it, the same stream's at each rate; --goodput refuses it", async () => {
  const args = ['sim', '--workload', 'video-qa', '--instances', '2', '--rps', '1,2', '--requests', '120'];
  const json = await runCli([...args, '--policy', 'e2,round-robin', '--floor', '--json']);
  assert.equal(json.code, 0, json.stderr);
  const out = JSON.parse(json.stdout) as {
    results: { policy: string; rps: number; latency: { mean: number; p99: number } }[];
    floors: { policy: string; rps: number; floor: { mean: number; p99: number }; meanOverFloor: number }[];
  };
  assert.deepEqual(
    out.floors.map((f) => `${f.policy}@${f.rps}`),
    ['e2@1', 'round-robin@1', 'e2@2', 'round-robin@2'],
  );
  for (const f of out.floors) {
    const run = out.results.find((r) => r.policy === f.policy && r.rps === f.rps)!;
    assert.ok(f.floor.mean > 0 && f.floor.mean <= run.latency.mean * 1.003, `${f.policy}@${f.rps}`);
    assert.ok(f.floor.p99 <= run.latency.p99 * 1.003, `${f.policy}@${f.rps} p99`);
    assert.ok(Math.abs(f.meanOverFloor - run.latency.mean / f.floor.mean) < 1e-9);
  }
  // The floor reads the stream and the model, not the policy: one per rate.
  assert.equal(out.floors[0]!.floor.mean, out.floors[1]!.floor.mean);
  const text = await runCli([...args, '--policy', 'round-robin', '--floor']);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /Latency floor: each measured request alone on an idle instance/);
  assert.match(text.stdout, /^round-robin\s+2\s+[\d.]+\s+[\d.]+\s+[\d.]+x$/m);
  const goodput = await runCli([
    ...args.slice(0, 5),
    '--rps',
    '1',
    '--slo-ttft',
    '5',
    '--slo-tpot',
    '0.2',
    '--goodput',
    '0.9',
    '--floor',
  ]);
  assert.equal(goodput.code, 1, goodput.stderr);
  assert.match(goodput.stderr, /--floor reads runs at --rps, not a --goodput search/);
});
