import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Engine } from '../../src/engine/engine.ts';
import type { EngineFinish } from '../../src/engine/types.ts';
import { concat, drive, linearCost, seq } from './helpers.ts';

test('exclusive prefixes (llama.cpp slots): a twin of a running request recomputes the busy prefix; paged engines share it', () => {
  const ttft: Record<string, number> = {};
  for (const exclusivePrefixes of [false, true]) {
    const engine = new Engine({
      costModel: linearCost({ a: 0.01, b: 0.001, c: 0, d: 0 }),
      chunkedPrefillTokens: 4096,
      exclusivePrefixes,
    });
    const prefix = seq(1000, 0);
    const finishes = new Map<string, EngineFinish>();
    // The first request caches the prefix and keeps running (long output) while the twin arrives;
    // a third comes after the first has finished.
    const log = drive(
      engine,
      [
        { id: 'first', tokens: concat(prefix, seq(10, 5000)), outputTokens: 100, arrival: 0 },
        { id: 'twin', tokens: concat(prefix, seq(10, 7000)), outputTokens: 1, arrival: 0.5 },
        { id: 'later', tokens: concat(prefix, seq(10, 6000)), outputTokens: 1, arrival: 10 },
      ],
      (record) => {
        for (const f of record.iteration.events.finished) finishes.set(f.id, f);
      },
    );
    assert.equal(finishes.get('twin')!.cachedTokens, exclusivePrefixes ? 0 : 1000);
    assert.equal(finishes.get('later')!.cachedTokens, 1000, 'once free again, the prefix serves');
    ttft[String(exclusivePrefixes)] = log.firstToken.get('twin')! - 0.5;
  }
  // Recomputing 1,000 tokens costs about 1 s more at 1 ms per token.
  assert.ok(ttft['true']! - ttft['false']! > 0.9, JSON.stringify(ttft));
});
