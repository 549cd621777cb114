import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createWorkload, workloadNames } from '../../src/workloads/registry.ts';
import { fingerprint, take } from './helpers.ts';

const requests = 120;

describe('every workload is a pure function of its options', () => {
  for (const name of workloadNames) {
    it(`${name}: the same seed replays byte for byte, another seed does not`, () => {
      const first = fingerprint([...createWorkload(name, { requests, rps: 5, seed: 42 })]);
      const again = fingerprint([...createWorkload(name, { requests, rps: 5, seed: 42 })]);
      assert.equal(first.length, requests);
      assert.deepEqual(again, first);
      const other = fingerprint([...createWorkload(name, { requests, rps: 5, seed: 43 })]);
      assert.notDeepEqual(
        other.map((r) => r.tokens),
        first.map((r) => r.tokens),
      );
      assert.notDeepEqual(
        other.map((r) => r.arrival),
        first.map((r) => r.arrival),
      );
    });

    it(`${name}: iterating the same workload twice gives the same stream`, () => {
      const workload = createWorkload(name, { requests: 50, rps: 5, seed: 9 });
      assert.deepEqual(fingerprint([...workload]), fingerprint([...workload]));
    });

    it(`${name}: a shorter stream is a prefix of a longer one`, () => {
      const short = fingerprint([...createWorkload(name, { requests: 40, rps: 5, seed: 3 })]);
      const long = fingerprint(take(createWorkload(name, { requests: 400, rps: 5, seed: 3 }), 40));
      assert.deepEqual(short, long);
    });
  }
});
