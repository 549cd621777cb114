import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createWorkload } from '../../../src/workloads/registry.ts';
import { meanRate } from '../../../src/workloads/traces/rate.ts';
import { parseWorkloadSpec, traceArrivals, traceRequests } from '../../../src/workloads/traces/registry.ts';
import { withArrivals } from '../../../src/workloads/traces/with-arrivals.ts';

describe('workload specs', () => {
  it('recognises traces and generators', () => {
    assert.deepEqual(parseWorkloadSpec('azure:data/conv.csv'), { kind: 'azure', path: 'data/conv.csv' });
    assert.deepEqual(parseWorkloadSpec('mooncake:/tmp/a:b.jsonl'), {
      kind: 'mooncake',
      path: '/tmp/a:b.jsonl',
    });
    assert.deepEqual(parseWorkloadSpec('loogle'), { kind: 'generator', name: 'loogle' });
  });

  it('lists the valid forms for an unknown one', () => {
    assert.throws(
      () => parseWorkloadSpec('sharegpt:x'),
      (error: Error) =>
        ['sharegpt:x', 'toolbench', 'mixed', 'azure:FILE', 'mooncake:FILE'].every((s) =>
          error.message.includes(s),
        ),
    );
    assert.throws(() => parseWorkloadSpec('azure:'), /names no file/);
  });
});

describe('trace files', () => {
  const dir = mkdtempSync(join(tmpdir(), 'preble-traces-'));
  const azure = join(dir, 'trace.csv');
  writeFileSync(
    azure,
    'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00.0,5,1\n2023-11-16 18:00:01.0,5,1\n2023-11-16 18:00:04.0,5,1\n',
  );
  const mooncake = join(dir, 'trace.jsonl');
  writeFileSync(
    mooncake,
    [
      '{"timestamp": 0, "input_length": 5, "output_length": 2, "hash_ids": [0]}',
      '{"timestamp": 2000, "input_length": 5, "output_length": 2, "hash_ids": [0]}',
    ].join('\n'),
  );

  it('replays at the trace timing, or re-timed to a mean rate', () => {
    const spec = { kind: 'azure', path: azure } as const;
    assert.deepEqual(traceArrivals(spec), [0, 1, 4]);
    assert.deepEqual(traceArrivals(spec, { rps: 1 }), [0, 0.5, 2]);
    const requests = [...traceRequests(spec, { seed: 1, rps: 2, requests: 2 })];
    assert.deepEqual(
      requests.map((r) => r.arrival),
      [0, 0.5],
    );
    assert.equal(meanRate(requests.map((r) => r.arrival)), 2);
    const moon = [...traceRequests({ kind: 'mooncake', path: mooncake }, { seed: 1 })];
    assert.deepEqual(
      moon.map((r) => r.arrival),
      [0, 2],
    );
    assert.deepEqual(moon[0]!.tokens, moon[1]!.tokens);
  });

  it('gives a generator the trace arrivals', () => {
    const arrivals = traceArrivals({ kind: 'azure', path: azure });
    const stream = withArrivals(createWorkload('toolbench', { requests: 10, rps: 1, seed: 1 }), arrivals);
    const requests = [...stream];
    assert.deepEqual(
      requests.map((r) => r.arrival),
      [0, 1, 4],
    );
    assert.equal(requests[0]!.workload, 'toolbench');
    assert.deepEqual(
      [...withArrivals(requests.slice(0, 2), arrivals)].map((r) => r.arrival),
      [0, 1],
    );
  });

  it('refuses to re-time a window that spans no time', () => {
    assert.throws(
      () => traceRequests({ kind: 'azure', path: azure }, { seed: 1, rps: 1, requests: 1 }),
      /spans no time/,
    );
    const empty = join(mkdtempSync(join(tmpdir(), 'preble-empty-')), 'empty.jsonl');
    writeFileSync(empty, '\n');
    assert.throws(
      () => traceArrivals({ kind: 'mooncake', path: empty }, { rps: 1 }),
      /cannot re-time mooncake:.*empty\.jsonl to 1 req\/s: it has no rows/,
    );
  });
});
