import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
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

test('preble sim rejects bad input with one line', async () => {
  for (const [args, reason] of [
    [['sim', '--workload', 'nope'], /unknown|valid/],
    [['sim', '--workload', 'toolbench', '--rps', '0'], /positive/],
    [['sim', '--workload', 'toolbench', '--queue-policy', 'nope'], /unknown queue policy/],
    [['sim', '--workload', 'azure:/no/such/file.csv'], /no\/such|not found|ENOENT|cannot/i],
    [['sim'], /required option/],
  ] as const) {
    const r = await runCli(args);
    assert.notEqual(r.code, 0, args.join(' '));
    assert.match(r.stderr, reason);
    assert.doesNotMatch(r.stderr, /\n\s+at /);
  }
});
