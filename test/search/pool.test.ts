import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { canonicalJson, directoryCache, taskHash } from '../../src/search/cache.ts';
import { evaluateTasks } from '../../src/search/pool.ts';
import type { CapacityTask } from '../../src/search/task.ts';

const task = (seed: number): CapacityTask => ({
  scenario: {
    workload: 'synthetic:in=128,out=16',
    requests: 30,
    seed,
    slo: { ttft: 0.5, tpot: 0.05 },
    policy: 'round-robin',
    fleet: { instances: [{ model: 'llama3-8b', gpu: 'h100', maxRunning: 8 }] },
  },
  criterion: { kind: 'slo' },
  relativeTolerance: 0.2,
});

describe('cache keys', () => {
  test('equal tasks hash alike whatever their key order; different tasks differ', () => {
    assert.equal(canonicalJson({ b: 1, a: [{ d: 2, c: 3 }] }), '{"a":[{"c":3,"d":2}],"b":1}');
    const t = task(1);
    const reordered = JSON.parse(
      JSON.stringify({ relativeTolerance: 0.2, criterion: t.criterion, scenario: t.scenario }),
    );
    assert.equal(taskHash(reordered), taskHash(t));
    assert.notEqual(taskHash(task(2)), taskHash(t));
  });
});

describe('evaluateTasks', () => {
  test('a worker thread answers as this thread does, and a repeated search comes from the cache', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'preble-plan-cache-'));
    const tasks = [task(1), task(2)];
    const inline = await evaluateTasks(tasks, { threads: 0, cache: directoryCache(join(dir, 'a')) });
    const pooled = await evaluateTasks(tasks, { threads: 1, cache: directoryCache(join(dir, 'b')) });
    assert.deepEqual(pooled.capacities, inline.capacities);
    assert.equal(readdirSync(join(dir, 'b')).length, 2);
    const seen: number[] = [];
    const again = await evaluateTasks(tasks, {
      threads: 1,
      cache: directoryCache(join(dir, 'b')),
      onDone: (done) => seen.push(done),
    });
    assert.equal(again.cached, 2);
    assert.deepEqual(again.capacities, inline.capacities);
    assert.deepEqual(seen, [2]);
  });
});
