import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { blockTokens } from '../../../src/workloads/traces/block-tokens.ts';
import { BAILIAN_FORMAT } from '../../../src/workloads/traces/block-trace-format.ts';
import { mooncakeArrivals, mooncakeRequests } from '../../../src/workloads/traces/mooncake.ts';
import { parseWorkloadSpec, traceRequests } from '../../../src/workloads/traces/registry.ts';

/** A Qwen-Bailian row: seconds, 16-token blocks, session fields the replay reads past. */
function row(timestamp: number, inputLength: number, hashIds: number[], turn = 1): string {
  return JSON.stringify({
    chat_id: hashIds[0],
    parent_chat_id: turn === 1 ? -1 : 0,
    timestamp,
    input_length: inputLength,
    output_length: 8,
    type: 'text',
    turn,
    hash_ids: hashIds,
  });
}

const trace = [row(61.114, 40, [0, 1, 2]), row(62.5, 70, [0, 1, 2, 3, 4], 2), row(64, 16, [9])].join('\n');

describe('bailian trace (Qwen-Bailian JSONL)', () => {
  it('reads timestamps in seconds and 16-token blocks', () => {
    const requests = [...mooncakeRequests(trace, { seed: 2 }, BAILIAN_FORMAT)];
    assert.deepEqual(
      requests.map((r) => [r.id, r.tokens.length, r.outputTokens, r.workload]),
      [
        ['bailian-0', 40, 8, 'bailian'],
        ['bailian-1', 70, 8, 'bailian'],
        ['bailian-2', 16, 8, 'bailian'],
      ],
    );
    const arrivals = mooncakeArrivals(trace, {}, BAILIAN_FORMAT);
    assert.ok(Math.abs(arrivals[1]! - 1.386) < 1e-9 && Math.abs(arrivals[2]! - 2.886) < 1e-9, `${arrivals}`);
    // The later turn shares its history's 40 tokens: two whole blocks and half of the third.
    const [a, b] = requests;
    assert.deepEqual(a!.tokens, b!.tokens.subarray(0, 40));
    assert.deepEqual(a!.tokens.subarray(32), blockTokens(2, 2).subarray(0, 8));
    assert.notEqual(a!.tokens[0], requests[2]!.tokens[0]);
  });

  it('names its own format in errors: block count at 16 tokens, time in seconds', () => {
    assert.throws(
      () => [...mooncakeRequests(row(0, 40, [0]), { seed: 1 }, BAILIAN_FORMAT)],
      /bailian trace line 1: input_length 40 needs 3 hash_ids of 16 tokens, got 1/,
    );
    assert.throws(
      () => [...mooncakeRequests(`${row(2.5, 16, [0])}\n${row(1.5, 16, [1])}`, { seed: 1 }, BAILIAN_FORMAT)],
      /bailian trace line 2: timestamp 1.5 goes back in time \(previous 2.5\); rows must be in time order: jq -c -s 'sort_by\(\.timestamp\)\[\]' FILE sorts them/,
    );
  });

  it('takes raw 64-bit block hashes, past 2^53: equal ones share their tokens, distinct ones do not', () => {
    const big = (t: number, ids: string) =>
      `{"timestamp": ${t}, "input_length": 32, "output_length": 4, "hash_ids": [${ids}]}`;
    const text = [
      big(0, '18446744073709551557, 9223372036854775783'),
      big(1, '18446744073709551557, 12345678901234567890'),
    ].join('\n');
    // Before: refused, "hash_ids" must be an array of non-negative integers.
    const [a, b] = [...mooncakeRequests(text, { seed: 3 }, BAILIAN_FORMAT)];
    assert.deepEqual(a!.tokens.subarray(0, 16), b!.tokens.subarray(0, 16));
    assert.notDeepEqual(a!.tokens.subarray(16), b!.tokens.subarray(16));
  });

  it('is the workload bailian:FILE, re-timed like any trace', () => {
    assert.deepEqual(parseWorkloadSpec('bailian:/x.jsonl'), { kind: 'bailian', path: '/x.jsonl' });
    const path = join(mkdtempSync(join(tmpdir(), 'preble-bailian-')), 'trace.jsonl');
    writeFileSync(path, `${trace}\n`);
    const own = [...traceRequests({ kind: 'bailian', path }, { seed: 1 })];
    assert.ok(Math.abs(own[2]!.arrival - 2.886) < 1e-9);
    // Two gaps over 2.886 s: 0.693 req/s; at 2 req/s the same rows arrive 2.886 times faster.
    const fast = [...traceRequests({ kind: 'bailian', path }, { seed: 1, rps: 2 })];
    assert.ok(Math.abs(fast[2]!.arrival - 1) < 1e-9, `${fast[2]!.arrival}`);
  });
});
