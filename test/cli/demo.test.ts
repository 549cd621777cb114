import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCli } from './run-cli.ts';

test('preble demo runs the policies over real HTTP and e2 reuses more of the shared prefixes', async () => {
  const r = await runCli([
    'demo',
    '--replicas',
    '2',
    '--requests',
    '40',
    '--rps',
    '2',
    '--time-scale',
    // 20, not 100: at 100 the 2 rps arrive 5 ms apart in wall time, within the HTTP and timer jitter
    // of a busy machine, and round robin's hit rate swung 0.01-0.15 with the order they met the
    // replicas in; 25 ms apart it is the workload's (0.05) run after run, beside two CPU hogs too.
    '20',
    '--policy',
    'e2,round-robin',
    '--repeats',
    '2',
    '--json',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const { results, verdict } = JSON.parse(r.stdout) as {
    verdict: { winner: string; summaries: { policy: string; means: number[] }[] };
    results: {
      policy: string;
      run: number;
      completed: number;
      cacheHitRate: number;
      latency: { mean: number };
      perInstance: { requests: number }[];
    }[];
  };
  // Every policy runs once before any runs again.
  assert.deepEqual(
    results.map((x) => `${x.policy}#${x.run}`),
    ['e2#1', 'round-robin#1', 'e2#2', 'round-robin#2'],
  );
  assert.deepEqual(
    verdict.summaries.map((s) => [s.policy, s.means.length]),
    [
      ['e2', 2],
      ['round-robin', 2],
    ],
  );
  assert.ok(['e2', 'round-robin'].includes(verdict.winner));
  for (const x of results) {
    assert.equal(x.completed, 40, 'every request answered');
    assert.equal(
      x.perInstance.reduce((s, i) => s + i.requests, 0),
      40,
    );
  }
  // Counts the replicas reported, not timings: e2 keeps each video where it is cached, round robin
  // computes it on both replicas; every e2 run against every round-robin run.
  const rates = (policy: string) => results.filter((x) => x.policy === policy).map((x) => x.cacheHitRate);
  assert.ok(
    Math.min(...rates('e2')) > Math.max(...rates('round-robin')),
    JSON.stringify(results.map((x) => x.cacheHitRate)),
  );
});
