import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { blockTokens, MOONCAKE_BLOCK_TOKENS } from '../../../src/workloads/traces/block-tokens.ts';
import {
  mooncakeArrivals,
  mooncakeRequests,
  readMooncakeFile,
} from '../../../src/workloads/traces/mooncake.ts';

const B = MOONCAKE_BLOCK_TOKENS;

function line(timestamp: number, inputLength: number, hashIds: number[], outputLength = 10): string {
  return JSON.stringify({
    timestamp,
    input_length: inputLength,
    output_length: outputLength,
    hash_ids: hashIds,
  });
}

/** Length of the common prefix of two token arrays. */
function commonPrefix(a: Uint32Array, b: Uint32Array): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

const trace = [
  line(1000, 3 * B, [0, 1, 2]),
  line(1500, 2 * B + 100, [0, 1, 7], 0),
  line(1500, 4 * B, [0, 5, 6, 8]),
  line(4000, 10, [9]),
].join('\n');

describe('mooncake trace', () => {
  it('replays arrivals (ms -> s from the first row) and lengths', () => {
    const requests = [...mooncakeRequests(trace, { seed: 3 })];
    assert.deepEqual(
      requests.map((r) => [r.id, r.arrival, r.tokens.length, r.outputTokens, r.workload]),
      [
        ['mooncake-0', 0, 3 * B, 10, 'mooncake'],
        ['mooncake-1', 0.5, 2 * B + 100, 1, 'mooncake'],
        ['mooncake-2', 0.5, 4 * B, 10, 'mooncake'],
        ['mooncake-3', 3, 10, 10, 'mooncake'],
      ],
    );
    assert.deepEqual(mooncakeArrivals(trace, { scale: 2, offset: 1, limit: 2 }), [0, 0]);
  });

  it('shares exactly the tokens of equal leading hash ids', () => {
    const [a, b, c, d] = [...mooncakeRequests(trace, { seed: 3 })].map((r) => r.tokens);
    assert.equal(commonPrefix(a!, b!), 2 * B);
    assert.equal(commonPrefix(a!, c!), B);
    assert.ok(commonPrefix(a!, d!) < 2);
  });

  it('cuts the partial last block from the block of its id', () => {
    const [, b] = [...mooncakeRequests(trace, { seed: 3 })];
    assert.deepEqual(b!.tokens.subarray(2 * B), blockTokens(3, 7).subarray(0, 100));
  });

  it('makes block tokens a function of (seed, id) only; different ids differ within two tokens', () => {
    assert.deepEqual(blockTokens(1, 42), blockTokens(1, 42));
    assert.notDeepEqual(blockTokens(1, 42), blockTokens(2, 42));
    fc.assert(
      fc.property(fc.integer(), fc.nat(2 ** 30), fc.nat(2 ** 30), (seed, x, y) => {
        fc.pre(x !== y);
        return commonPrefix(blockTokens(seed, x), blockTokens(seed, y)) < 2;
      }),
    );
    assert.ok(blockTokens(1, 123_456).every((token) => token < 32000));
  });

  it('is deterministic and re-iterable', () => {
    const stream = mooncakeRequests(trace, { seed: 9 });
    assert.deepEqual([...stream], [...stream]);
  });

  it('rejects malformed lines, naming the line (blank lines count)', () => {
    const cases: [string, RegExp][] = [
      ['{"timestamp": 0,', /line 3: not valid JSON/],
      ['[1, 2]', /line 3: expected a JSON object/],
      [
        JSON.stringify({ input_length: 10, output_length: 1, hash_ids: [1] }),
        /line 3: missing numeric "timestamp"/,
      ],
      [JSON.stringify({ timestamp: 5, output_length: 1, hash_ids: [1] }), /line 3: "input_length" must be/],
      [JSON.stringify({ timestamp: 5, input_length: 3, hash_ids: [1] }), /line 3: "output_length" must be/],
      [JSON.stringify({ timestamp: 5, input_length: 3, output_length: 1 }), /line 3: "hash_ids" must be/],
      [line(5, B + 1, [1]), /line 3: input_length 513 needs 2 hash_ids of 512 tokens, got 1/],
      [line(5, B, [1, 2]), /line 3: input_length 512 needs 1 hash_ids of 512 tokens, got 2/],
      [line(-1, 10, [1]), /line 3: timestamp -1 goes back in time/],
    ];
    for (const [bad, message] of cases) {
      assert.throws(() => [...mooncakeRequests(`${line(0, 10, [0])}\n\n${bad}`, { seed: 1 })], message);
    }
  });

  it('reads a file', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'preble-mooncake-')), 'trace.jsonl');
    writeFileSync(path, `${trace}\n`);
    assert.equal([...readMooncakeFile(path, { seed: 1, limit: 3 })].length, 3);
  });

  it('reads a file that starts with a byte-order mark and ends its lines with CRLF', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'preble-mooncake-')), 'trace.jsonl');
    // Before: "mooncake trace line 1: not valid JSON (Unexpected token ...)".
    writeFileSync(path, `\ufeff${trace.replaceAll('\n', '\r\n')}\r\n`);
    const requests = [...readMooncakeFile(path, { seed: 1 })];
    assert.deepEqual(
      requests.map((r) => r.tokens),
      [...mooncakeRequests(trace, { seed: 1 })].map((r) => r.tokens),
    );
  });
});
