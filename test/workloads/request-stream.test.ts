import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { traceWindow } from '../../src/workloads/request-stream.ts';

function trace(timestampsMs: readonly number[]): string {
  const path = join(mkdtempSync(join(tmpdir(), 'preble-stream-')), 'trace.jsonl');
  const rows = timestampsMs.map((timestamp, k) =>
    JSON.stringify({ timestamp, input_length: 512, output_length: 4, hash_ids: [k] }),
  );
  writeFileSync(path, `${rows.join('\n')}\n`);
  return `mooncake:${path}`;
}

test("a trace's own rate is its rows' mean gap rate, to three decimals; a generator has none", () => {
  // Two gaps over 7 s: 0.2857... requests/s.
  assert.equal(traceWindow(trace([0, 3000, 7000]), 100)?.rate, 0.286);
  // Only the rows a run takes count: the first two, one gap of 3 s.
  assert.equal(traceWindow(trace([0, 3000, 7000]), 2)?.rate, 0.333);
  assert.equal(traceWindow('toolbench', 100), undefined);
  assert.throws(() => traceWindow(trace([5, 5]), 100), /2 rows arrive at one instant/);
});

test('a run has --requests requests, or the rows of a shorter trace', () => {
  assert.equal(traceWindow(trace([0, 1000, 2000]), 2000)?.rows, 3);
  assert.equal(traceWindow(trace([0, 1000, 2000]), 2)?.rows, 2);
});
