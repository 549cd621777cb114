import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  admitsDecode,
  type DecodingRequest,
  predictedRemaining,
} from '../../../src/core/replica-queue/tetri-decode-admission.ts';

const d = (id: string, kvTokens: number, generated: number, predicted?: number): DecodingRequest =>
  predicted === undefined
    ? { id, kvTokens, generated }
    : { id, kvTokens, generated, prediction: { tokens: predicted } };

describe('tetriinfer decode admission (§3.4) on hand-made states', () => {
  // Running: x has 40 tokens left by its prediction, y 10; the candidate brings 100 KV tokens, 60 to go.
  const running = [d('x', 500, 60, 100), d('y', 300, 90, 100)];
  const candidate = d('c', 100, 1, 61);

  it('predicted remaining: prediction less generated, at least 1 once outrun, none without a prediction', () => {
    assert.equal(predictedRemaining(candidate), 60);
    assert.equal(predictedRemaining(d('o', 10, 150, 100)), 1);
    assert.equal(predictedRemaining(d('n', 10, 5)), undefined);
    // A bucketed prediction counts from its range's lower end.
    const bucketed = {
      id: 'b',
      kvTokens: 10,
      generated: 50,
      prediction: { tokens: 300, bucket: { low: 200, high: 400 } },
    };
    assert.equal(predictedRemaining(bucketed), 150);
    assert.equal(predictedRemaining(bucketed, 'point'), 250); // counted from its middle instead
  });

  it('greedy admits whatever the engine found room for', () => {
    assert.equal(admitsDecode('greedy', candidate, running, 0), true);
  });

  it('reserve-static: KV plus predicted remaining within what is free now', () => {
    assert.equal(admitsDecode('reserve-static', candidate, running, 160), true); // 100 + 60
    assert.equal(admitsDecode('reserve-static', candidate, running, 159), false);
  });

  it('reserve-dynamic: room left when the shortest remaining job (y, 10 steps) ends', () => {
    // Growth until then: x 10, y 10, candidate 10, plus the candidate's 100 KV = 130.
    assert.equal(admitsDecode('reserve-dynamic', candidate, running, 130), true);
    assert.equal(admitsDecode('reserve-dynamic', candidate, running, 129), false);
    // Where static refuses (needs 160), dynamic admits: y frees memory first.
    assert.equal(admitsDecode('reserve-static', candidate, running, 140), false);
    assert.equal(admitsDecode('reserve-dynamic', candidate, running, 140), true);
  });

  it('reserve-dynamic with a shorter candidate: its own end bounds the horizon', () => {
    const short = d('s', 100, 1, 4); // 3 to go
    assert.equal(admitsDecode('reserve-dynamic', short, running, 109), true); // 100 + 3 x 3
    assert.equal(admitsDecode('reserve-dynamic', short, running, 108), false);
  });

  it('a candidate without a prediction is admitted as greedy would', () => {
    assert.equal(admitsDecode('reserve-static', d('n', 100, 1), running, 0), true);
    assert.equal(admitsDecode('reserve-dynamic', d('n', 100, 1), running, 0), true);
  });
});
