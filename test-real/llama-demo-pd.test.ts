/**
 * Integration: `preble demo --pd --real` end to end (tiny model): colocated and disaggregated
 * configurations on llama-server replicas, with the simulator's prediction beside each. Run by
 * `npm run test:real`. Assertions are on counts and shapes, never on time.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCli } from '../test/cli/run-cli.ts';

test('preble demo --pd --real --json: one result per configuration, in the sim --json shape', async () => {
  const r = await runCli([
    'demo',
    '--pd',
    '--real',
    '--preset',
    'tiny',
    '--requests',
    '6',
    '--rps',
    '2',
    '--json',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const { results, verdict } = JSON.parse(r.stdout) as {
    results: {
      configuration: string;
      completed: number;
      requests: number;
      instances: number;
      ttft: { mean: number };
      tpot: { mean: number };
      latency: { mean: number };
      pd: { disaggregated: number; transferSeconds?: number; prefillCachedShare?: number };
      sim: { latency: { mean: number }; ttft: { mean: number } };
    }[];
    verdict: { ttftWinner: string; lines: string[] };
  };
  assert.deepEqual(
    results.map((x) => x.configuration),
    ['e2-plus@2M', 'distserve@1P1D', 'prefix-pd@1P1D'],
  );
  for (const x of results) {
    assert.equal(x.completed, 6, `${x.configuration}: every request answered`);
    assert.equal(x.instances, 2);
    assert.ok(x.ttft.mean > 0 && x.latency.mean >= x.ttft.mean);
    assert.ok(x.sim.latency.mean > 0, `${x.configuration}: the simulator's prediction beside it`);
    const split = x.configuration !== 'e2-plus@2M';
    // On 1P1D every request's prefill and decode run on different replicas, the slot moved between them.
    assert.equal(x.pd.disaggregated, split ? 6 : 0);
    if (split) assert.ok((x.pd.transferSeconds ?? 0) > 0, `${x.configuration}: slot moves timed`);
    // llama-server does not count prefix-cache lookups: no made-up cached share.
    assert.equal(x.pd.prefillCachedShare, undefined);
  }
  assert.ok(results.some((x) => x.configuration === verdict.ttftWinner));
});
