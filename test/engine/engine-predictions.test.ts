import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LengthPrediction } from '../../src/core/length/types.ts';
import { createFcfsPolicy } from '../../src/core/replica-queue/fcfs.ts';
import type { QueuePolicy } from '../../src/core/replica-queue/types.ts';
import { Engine } from '../../src/engine/engine.ts';
import { drive, EASY, linearCost, seq } from './helpers.ts';

/** fcfs that records what it sees of each waiting request's prediction and output so far. */
function watching(seen: string[]): QueuePolicy {
  const fcfs = createFcfsPolicy();
  return {
    ...fcfs,
    select(waiting, ctx) {
      for (const q of waiting) seen.push(`${q.id}:${q.predictedOutputTokens}/${q.generatedTokens}`);
      return fcfs.select(waiting, ctx);
    },
  };
}

describe('Engine: length predictions', () => {
  it('shows the queue policy each request prediction and its output so far', () => {
    const seen: string[] = [];
    const engine = new Engine({ costModel: linearCost(EASY), queuePolicy: watching(seen) });
    drive(engine, [
      { id: 'a', tokens: seq(10, 1), outputTokens: 3, arrival: 0, prediction: { tokens: 5 } },
      { id: 'b', tokens: seq(10, 100), outputTokens: 3, arrival: 0 },
    ]);
    assert.deepEqual(seen.slice(0, 2), ['a:5/0', 'b:undefined/0']);
  });

  it('asks for a new prediction each time a request outruns its prediction, and only then', () => {
    const asked: string[] = [];
    const repredict = (id: string, generated: number, previous: LengthPrediction) => {
      asked.push(`${id}@${generated}:${previous.tokens}`);
      return { tokens: previous.tokens * 2 };
    };
    const engine = new Engine({ costModel: linearCost(EASY), repredict });
    drive(
      engine,
      [
        { id: 'a', tokens: seq(10, 1), outputTokens: 9, arrival: 0, prediction: { tokens: 2 } },
        { id: 'b', tokens: seq(10, 100), outputTokens: 9, arrival: 0, prediction: { tokens: 9 } },
      ],
      (_record, e) => e.checkInvariants(),
    );
    // a: outrun at 2 (-> 4) and 4 (-> 8) and 8 (-> 16); never at its finishing token. b: never.
    assert.deepEqual(asked, ['a@2:2', 'a@4:4', 'a@8:8']);
  });
});
