import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCli } from './run-cli.ts';

interface Percentiles {
  mean: number;
  p50: number;
  p99: number;
}

test('preble demo --pd runs colocated and disaggregated configurations over real HTTP', async () => {
  const r = await runCli([
    'demo',
    '--pd',
    '--requests',
    '12',
    '--rps',
    '4',
    '--time-scale',
    '50',
    '--policy',
    'e2-plus@4M,distserve@2P2D,prefix-pd@1P1D2M',
    '--json',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const { results, verdict } = JSON.parse(r.stdout) as {
    verdict: {
      ttftWinner: string;
      tpotWinner: string;
      summaries: { configuration: string }[];
      lines: string[];
    };
    results: {
      configuration: string;
      policy: string;
      fleet: string;
      run: number;
      workload: string;
      instances: number;
      rps: number;
      requests: number;
      completed: number;
      latency: Percentiles;
      ttft: Percentiles;
      tpot: Percentiles;
      cacheHitRate: number;
      throughputRps: number;
      perInstance: { requests: number; role: string; prefills: number }[];
      pd: {
        disaggregated: number;
        prefillCachedShare: number;
        transferSeconds?: number;
        prefillSeconds?: number;
      };
      sim: { latency: Percentiles; ttft: Percentiles; tpot: Percentiles; transfer?: Percentiles };
    }[];
  };
  assert.deepEqual(
    results.map((x) => [x.configuration, x.policy, x.fleet]),
    [
      ['e2-plus@4M', 'e2-plus', '4M'],
      ['distserve@2P2D', 'distserve', '2P2D'],
      ['prefix-pd@1P1D2M', 'prefix-pd', '1P1D2M'],
    ],
  );
  for (const x of results) {
    assert.equal(x.instances, 4, 'the same number of GPUs');
    assert.equal(x.requests, 12);
    assert.equal(x.completed, 12, `${x.configuration}: every request answered`);
    // `preble sim --json`'s fields.
    for (const key of ['workload', 'rps', 'cacheHitRate', 'throughputRps'] as const)
      assert.ok(key in x, `${x.configuration} has ${key}`);
    for (const p of [x.latency, x.ttft, x.tpot, x.sim.latency, x.sim.ttft, x.sim.tpot])
      for (const key of ['mean', 'p50', 'p99'] as const) assert.equal(typeof p[key], 'number');
    // Requests are counted on their decode (or only) replica.
    assert.equal(
      x.perInstance.reduce((s, i) => s + i.requests, 0),
      12,
    );
  }
  const [colocated, distserve, prefixPd] = results as [
    (typeof results)[0],
    (typeof results)[0],
    (typeof results)[0],
  ];
  assert.equal(colocated.pd.disaggregated, 0);
  assert.deepEqual(
    colocated.perInstance.map((i) => i.role),
    ['mixed', 'mixed', 'mixed', 'mixed'],
  );
  // DistServe disaggregates every request: prefill on a prefill replica, decode on a decode one.
  assert.equal(distserve.pd.disaggregated, 12);
  assert.deepEqual(
    distserve.perInstance.map((i) => i.role),
    ['prefill', 'prefill', 'decode', 'decode'],
  );
  assert.deepEqual(
    distserve.perInstance.map((i) => (i.role === 'prefill' ? i.requests : i.prefills)),
    [0, 0, 0, 0],
  );
  assert.equal(
    distserve.perInstance.reduce((s, i) => s + i.prefills, 0),
    12,
  );
  assert.equal(typeof distserve.pd.transferSeconds, 'number');
  assert.ok(distserve.sim.transfer !== undefined, 'the simulator moved KV too');
  // prefix-pd on 1P1D2M: the first request of each document has a long uncached prefill.
  assert.deepEqual(
    prefixPd.perInstance.map((i) => i.role),
    ['prefill', 'decode', 'mixed', 'mixed'],
  );
  assert.ok(prefixPd.pd.disaggregated > 0, JSON.stringify(prefixPd.pd));
  assert.equal(prefixPd.perInstance[0]!.prefills, prefixPd.pd.disaggregated);
  assert.deepEqual(
    verdict.summaries.map((s) => s.configuration),
    results.map((x) => x.configuration),
  );
  assert.ok(results.some((x) => x.configuration === verdict.ttftWinner));
  assert.ok(results.some((x) => x.configuration === verdict.tpotWinner));
  assert.match(verdict.lines.join('\n'), /TTFT: .* wins/);
  assert.match(verdict.lines.join('\n'), /TPOT: .* wins/);
});

test('preble demo --pd refuses a colocated policy on prefill/decode replicas, and a workload with --real', async () => {
  const colocated = await runCli(['demo', '--pd', '--policy', 'e2@2P2D', '--requests', '2']);
  assert.notEqual(colocated.code, 0);
  assert.match(colocated.stderr, /e2 is colocated/);
  // Refused before anything is built or started: the real demo runs its own stream.
  const real = await runCli(['demo', '--pd', '--real', '--workload', 'toolbench']);
  assert.notEqual(real.code, 0);
  assert.match(real.stderr, /--pd --real runs its own shared-document stream/);
});
