import assert from 'node:assert/strict';
import { test } from 'node:test';
import { demoVerdict, type RunFigures } from '../../src/demo/verdict.ts';

function run(policy: string, mean: number, hit = 0.5, perReplica = [10, 10]): RunFigures {
  return {
    policy,
    latency: { mean, p99: mean * 3 },
    cacheHitRate: hit,
    perInstance: perReplica.map((requests) => ({ requests })),
  };
}

test('a policy whose worst run beats every other run wins, by the ratio of medians', () => {
  const v = demoVerdict([
    run('cache-aware', 2.5, 0.7, [12, 8]),
    run('round-robin', 13, 0.4),
    run('cache-aware', 3.6, 0.7, [12, 8]),
    run('round-robin', 28, 0.4),
  ]);
  assert.equal(v.winner, 'cache-aware');
  assert.deepEqual(v.evenWith, []);
  assert.match(
    v.lines[0]!,
    /^cache-aware wins: mean latency 3\.05 s, 6\.7x ahead of round-robin \(20\.50 s\)\.$/,
  );
  assert.match(v.lines[1]!, /cache-aware 0\.70, round-robin 0\.40/);
  // 12 of 20 requests on one of two replicas: 1.2 times the mean.
  assert.match(v.lines[1]!, /cache-aware 1\.20, round-robin 1\.00/);
  assert.match(v.lines[2]!, /2 runs each.*cache-aware 2\.50-3\.60 s, round-robin 13\.00-28\.00 s/);
});

test('overlapping runs are called even, not a win', () => {
  const v = demoVerdict([run('e2', 3.6), run('cache-aware', 2.5), run('e2', 7.3), run('cache-aware', 3.7)]);
  assert.equal(v.winner, 'cache-aware');
  assert.deepEqual(v.evenWith, ['e2']);
  assert.match(v.lines[0]!, /^No clear winner: cache-aware \(2\.50-3\.70 s\), e2 \(3\.60-7\.30 s\) overlap/);
});

test('one run each says the spread was not measured', () => {
  const v = demoVerdict([run('e2', 4), run('round-robin', 8), run('least-load', 12)]);
  assert.match(
    v.lines[0]!,
    /^e2 wins: mean latency 4\.00 s, 2\.0x ahead of round-robin \(8\.00 s\) and 3\.0x ahead of least-load/,
  );
  assert.match(v.lines[2]!, /^One run each/);
  assert.throws(() => demoVerdict([]), /no runs/);
});
