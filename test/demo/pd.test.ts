import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pdSimulation } from '../../src/cli/demo-pd-sim.ts';
import { type PdRunFigures, parsePdConfigurations, pdVerdict } from '../../src/demo/pd.ts';
import { sharedPrefixRequests } from '../../src/demo/shared-prefix.ts';

const p = (mean: number) => ({ mean, p50: mean, p90: mean, p99: mean });

function run(
  configuration: string,
  ttft: number,
  tpot: number,
  pd: PdRunFigures['pd'] = { disaggregated: 0, prefillCachedShare: 0.5, transferShareOfTtft: 0 },
): PdRunFigures {
  return {
    policy: configuration.split('@')[0]!,
    configuration,
    ttft: p(ttft),
    tpot: p(tpot),
    latency: p(ttft + 100 * tpot),
    completed: 100,
    cacheHitRate: 0.5,
    pd,
  };
}

test('the verdict names the TTFT and TPOT winners, by how much, and why', () => {
  const v = pdVerdict([
    run('e2-plus@4M', 0.2, 0.05, {
      disaggregated: 0,
      prefillQueueSeconds: 0.1,
      prefillCachedShare: 0.8,
      transferShareOfTtft: 0,
    }),
    run('distserve@2P2D', 0.4, 0.03, {
      disaggregated: 100,
      prefillSeconds: 0.3,
      transferSeconds: 0.02,
      prefillCachedShare: 0.6,
      transferShareOfTtft: 0.05,
    }),
  ]);
  assert.equal(v.ttftWinner, 'e2-plus@4M');
  assert.equal(v.tpotWinner, 'distserve@2P2D');
  assert.equal(v.lines[0], 'TTFT: e2-plus@4M wins with 200.0 ms mean; distserve@2P2D 400.0 ms (+100%).');
  assert.equal(v.lines[1], 'TPOT: distserve@2P2D wins with 30.0 ms mean; e2-plus@4M 50.0 ms (+67%).');
  assert.match(
    v.lines[2]!,
    /e2-plus@4M: 0% of requests disaggregated, mixed replicas' queue 100\.0 ms, cached share of prefills 0\.80/,
  );
  assert.match(
    v.lines[2]!,
    /distserve@2P2D: 100% of requests disaggregated, KV transfer 5\.0% of TTFT, prefill leg 300\.0 ms, cached share of prefills 0\.60/,
  );
});

test('runs of one configuration are summarized by their median', () => {
  const v = pdVerdict([run('a@4M', 0.1, 0.01), run('a@4M', 0.5, 0.02), run('a@4M', 0.2, 0.03)]);
  assert.equal(v.summaries.length, 1);
  assert.equal(v.summaries[0]!.ttft, 0.2);
  assert.equal(v.summaries[0]!.tpot, 0.02);
  assert.match(v.lines[0]!, /only a@4M ran/);
});

test('configurations: POLICY@FLEET with roles in the simulator order, refused mismatches', () => {
  const [colocated, distserve, mixed, bare] = parsePdConfigurations(
    'e2-plus@4M, distserve@2p2d,prefix-pd@1P1D2M,e2',
    3,
    'mistral-7b-a6000',
  );
  assert.deepEqual(colocated, {
    name: 'e2-plus@4M',
    policy: 'e2-plus',
    fleet: '4M',
    roles: ['mixed', 'mixed', 'mixed', 'mixed'],
    queuePolicy: 'lpm',
  });
  assert.equal(distserve!.name, 'distserve@2P2D');
  assert.deepEqual(distserve!.roles, ['prefill', 'prefill', 'decode', 'decode']);
  assert.equal(distserve!.queuePolicy, 'fcfs');
  assert.deepEqual(mixed!.roles, ['prefill', 'decode', 'mixed', 'mixed']);
  assert.deepEqual(bare!.roles, ['mixed', 'mixed', 'mixed']);
  assert.throws(() => parsePdConfigurations('e2@2P2D', 4, 'mistral-7b-a6000'), /e2 is colocated/);
  assert.throws(
    () => parsePdConfigurations('distserve@4M', 4, 'mistral-7b-a6000'),
    /distserve is disaggregated/,
  );
  assert.throws(
    () => parsePdConfigurations('distserve@2P', 4, 'mistral-7b-a6000'),
    /prefill \(P\) and decode \(D\)/,
  );
  assert.throws(() => parsePdConfigurations('nope@4M', 4, 'mistral-7b-a6000'), /nope/);
});

test('the prediction runs the simulator on the same fleet with the emulated link', () => {
  const requests = sharedPrefixRequests({
    requests: 20,
    prefixes: 2,
    prefixChars: 2000,
    suffixChars: 50,
    outputTokens: 20,
    rps: 2,
    seed: 0,
  });
  const [distserve] = parsePdConfigurations('distserve@1P1D', 2, 'mistral-7b-a6000');
  const report = pdSimulation(distserve!, {
    workload: 'shared-prefix',
    rps: 2,
    requests,
    model: 'mistral-7b-a6000',
    seed: 0,
  });
  assert.equal(report.completed, 20);
  assert.equal(report.instances, 2);
  // 2,050 tokens x 131,072 bytes (Mistral-7B) over 25 GB/s, latency 0: about 10.7 ms, less what the
  // decode instance caches.
  assert.ok(
    report.transfer !== undefined && report.transfer.p99 > 0.01 && report.transfer.p99 < 0.0115,
    JSON.stringify(report.transfer),
  );
});
