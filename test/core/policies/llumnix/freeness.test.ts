import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type FreenessInput, llumnixFreeness } from '../../../../src/core/policies/llumnix/freeness.ts';

const base: FreenessInput = {
  capacityTokens: 10_000,
  signal: { running: 4, waiting: 0, queuedPrefillTokens: 0, usedKvTokens: 2_000, freeKvTokens: 8_000 },
  sentRequests: 0,
  sentTokens: 0,
  inflight: 4,
  headroomTokens: 0,
  draining: false,
};

describe('llumnix freeness', () => {
  it('is (capacity - physical usage) / batch size', () => {
    assert.equal(llumnixFreeness(base), (10_000 - 2_000) / 4);
  });

  it("counts the head-of-line request's demand (the mean queued prefill), so a blocked queue looks loaded", () => {
    const blocked = {
      ...base,
      signal: { ...base.signal!, waiting: 2, queuedPrefillTokens: 6_000 },
    };
    assert.equal(llumnixFreeness(blocked), (10_000 - 2_000 - 3_000) / 4);
  });

  it('adds what was sent since the poll, and the high-priority headroom', () => {
    assert.equal(llumnixFreeness({ ...base, sentRequests: 1, sentTokens: 500 }), (10_000 - 2_500) / 5);
    assert.equal(llumnixFreeness({ ...base, headroomTokens: 4_000 }), (10_000 - 6_000) / 4);
  });

  it('uses in-flight counts before the first poll, and a batch of 0 as 1', () => {
    assert.equal(llumnixFreeness({ ...base, signal: undefined, inflight: 2, sentTokens: 1_000 }), 9_000 / 2);
    assert.equal(
      llumnixFreeness({ ...base, signal: { ...base.signal!, running: 0, usedKvTokens: 0 } }),
      10_000,
    );
  });

  it('is minus infinity on a draining instance: it migrates everything out', () => {
    assert.equal(llumnixFreeness({ ...base, draining: true }), Number.NEGATIVE_INFINITY);
  });
});
