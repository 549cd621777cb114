import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { azureArrivals, azureRequests, readAzureFile } from '../../../src/workloads/traces/azure.ts';
import { meanRate } from '../../../src/workloads/traces/rate.ts';
import { parseTimestamp, secondsBetween } from '../../../src/workloads/traces/timestamp.ts';

const csv = [
  'TIMESTAMP,ContextTokens,GeneratedTokens',
  '2023-11-16 18:17:03.9799600,4808,10',
  '2023-11-16 18:17:04.0000001,12,0',
  '2023-11-16 18:17:10.9799599,300,25',
  '2023-11-16 18:18:03.9799600,7,1',
].join('\r\n');

describe('azure timestamps', () => {
  it('keeps all seven fractional digits (Date would drop the last four)', () => {
    const a = parseTimestamp('2023-11-16 18:17:03.9799600');
    const b = parseTimestamp('2023-11-16 18:17:04.0000001');
    assert.deepEqual([a.nanos, b.nanos], [979_960_000, 100]);
    assert.equal(secondsBetween(a, b), 0.0200401);
  });

  it('counts across midnight, month ends and zones', () => {
    const before = parseTimestamp('2023-12-31 23:59:59.5');
    assert.equal(secondsBetween(before, parseTimestamp('2024-01-01 00:00:00.25')), 0.75);
    assert.equal(
      secondsBetween(
        parseTimestamp('2024-05-10 00:00:00+00:00'),
        parseTimestamp('2024-05-10 02:00:01+02:00'),
      ),
      1,
    );
  });

  it('rejects what is not a timestamp', () => {
    assert.throws(() => parseTimestamp('18:17:03'), /invalid timestamp/);
  });
});

describe('azure trace', () => {
  it('replays arrivals relative to the first row, lengths, and fresh prompts', () => {
    const requests = [...azureRequests(csv, { seed: 1 })];
    assert.deepEqual(
      requests.map((r) => r.arrival),
      [0, 0.0200401, 6.9999999, 60],
    );
    assert.deepEqual(
      requests.map((r) => [r.id, r.tokens.length, r.outputTokens, r.workload]),
      [
        ['azure-0', 4808, 10, 'azure'],
        ['azure-1', 12, 1, 'azure'],
        ['azure-2', 300, 25, 'azure'],
        ['azure-3', 7, 1, 'azure'],
      ],
    );
    assert.notDeepEqual(requests[0]!.tokens.subarray(0, 7), requests[3]!.tokens);
  });

  it('is deterministic per seed and re-iterable', () => {
    const stream = azureRequests(csv, { seed: 5 });
    assert.deepEqual([...stream], [...stream]);
    assert.deepEqual([...stream], [...azureRequests(csv, { seed: 5 })]);
    assert.notDeepEqual([...stream][0]!.tokens, [...azureRequests(csv, { seed: 6 })][0]!.tokens);
  });

  it('re-times with scale (2 = twice as fast) and windows with offset and limit', () => {
    assert.deepEqual(azureArrivals(csv, { scale: 2 }), [0, 0.01002005, 3.49999995, 30]);
    const window = [...azureRequests(csv, { seed: 1, offset: 1, limit: 2 })];
    assert.deepEqual(
      window.map((r) => [r.id, r.arrival]),
      [
        ['azure-1', 0],
        ['azure-2', 6.9799598],
      ],
    );
  });

  it('names the line of a malformed row', () => {
    const bad = `${csv}\r\n2023-11-16 18:19:00.0,12\n`;
    assert.throws(() => [...azureRequests(bad, { seed: 1 })], /azure trace line 6: expected 3 fields/);
    const backwards = `${csv}\n2023-11-16 18:00:00.0,1,1`;
    assert.throws(() => azureArrivals(backwards), /line 6: timestamp goes back in time/);
    assert.throws(
      () => azureArrivals('2023-11-16 18:00:00.0,0,1'),
      /line 1: ContextTokens must be a positive/,
    );
    assert.throws(() => azureArrivals(csv, { scale: 0 }), /scale must be a positive number/);
  });

  it('reads a file', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'preble-azure-')), 'trace.csv');
    writeFileSync(path, csv);
    assert.equal([...readAzureFile(path, { seed: 1 })].length, 4);
    assert.throws(() => readAzureFile(`${path}.missing`, { seed: 1 }), /cannot read trace file/);
  });
});

const conv = fileURLToPath(
  new URL('../../../../shared/data/azure-llm-2023/AzureLLMInferenceTrace_conv.csv', import.meta.url),
);

describe('the real Azure 2023 conversation trace', { skip: !existsSync(conv) && 'trace file absent' }, () => {
  it('has 19,366 rows at about 5.5 requests per second', () => {
    const arrivals = azureArrivals(readFileSync(conv, 'utf8'));
    assert.equal(arrivals.length, 19_366);
    const rate = meanRate(arrivals);
    assert.ok(rate > 5.4 && rate < 5.6, `rate ${rate}`);
  });
});
