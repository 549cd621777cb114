import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFcfsPolicy } from '../../src/core/replica-queue/fcfs.ts';
import type { DecodingRequest, QueuePolicy } from '../../src/core/replica-queue/types.ts';
import { Engine } from '../../src/engine/engine.ts';
import { seq, simpleCostModel } from '../helpers/simple-cost-model.ts';

// The simple cost model charges 1 ms per new token of a batch, padding included.
function close(actual: number, expected: number): void {
  assert.ok(Math.abs(actual - expected) < 1e-12, `${actual} != ${expected}`);
}

describe('engine: TetriInfer padded fixed-size prefill chunks', () => {
  it('pads the last, partial chunk to the budget and charges the padding', () => {
    const engine = new Engine({
      costModel: simpleCostModel(10_000),
      role: 'prefill',
      chunkedPrefillTokens: 512,
      padPrefillChunks: true,
    });
    engine.submit({ id: 'a', tokens: seq(700, 1), outputTokens: 4 }, 0);
    close(engine.step(0).duration, 0.512); // a full chunk
    const last = engine.step(0.512);
    close(last.duration, 0.512); // 188 tokens padded to 512
    assert.equal(last.prefillTokens, 188); // the padding is not counted as prefill work
    assert.deepEqual(last.events.firstTokens, ['a']);
    engine.checkInvariants();
  });

  it('without padding (the default) the short chunk costs its own tokens', () => {
    const engine = new Engine({
      costModel: simpleCostModel(10_000),
      role: 'prefill',
      chunkedPrefillTokens: 512,
    });
    engine.submit({ id: 'a', tokens: seq(188, 1), outputTokens: 4 }, 0);
    close(engine.step(0).duration, 0.188);
  });

  it('a decode-only iteration is never padded', () => {
    const engine = new Engine({
      costModel: simpleCostModel(10_000),
      role: 'decode',
      chunkedPrefillTokens: 512,
      padPrefillChunks: true,
    });
    engine.adopt({ id: 'a', tokens: seq(100, 1), outputTokens: 3 }, { kvTokens: 100, generated: 1 }, 0);
    close(engine.step(0).duration, 0.001);
  });
});

describe('engine: a queue policy with its own adopt rule', () => {
  /** FCFS whose adopt rule admits only the ids in `allow`, recording what it was shown. */
  const policy = (allow: Set<string>, seen: [string, string[], number][]): QueuePolicy => ({
    ...createFcfsPolicy(),
    admitAdopted: (candidate: DecodingRequest, running: readonly DecodingRequest[], ctx) => {
      seen.push([candidate.id, running.map((r) => r.id), ctx.freeKvTokens]);
      return allow.has(candidate.id);
    },
  });

  it('is asked in adopt-queue order while something decodes; a refusal holds that request and those behind it', () => {
    const allow = new Set(['a']);
    const seen: [string, string[], number][] = [];
    const engine = new Engine({
      costModel: simpleCostModel(1000),
      role: 'decode',
      queuePolicy: policy(allow, seen),
    });
    engine.adopt({ id: 'a', tokens: seq(100, 1), outputTokens: 50 }, { kvTokens: 100, generated: 1 }, 0);
    engine.adopt({ id: 'b', tokens: seq(100, 500), outputTokens: 50 }, { kvTokens: 100, generated: 1 }, 0);
    engine.adopt({ id: 'c', tokens: seq(100, 900), outputTokens: 50 }, { kvTokens: 100, generated: 1 }, 0);
    const first = engine.step(0);
    assert.deepEqual(
      first.events.started.map((s) => s.id),
      ['a'],
    );
    // a was admitted unasked (nothing decoding); b saw a running and was refused; c was never asked.
    assert.deepEqual(seen, [['b', ['a'], 900]]);
    allow.add('b');
    allow.add('c');
    const second = engine.step(first.duration);
    assert.deepEqual(
      second.events.started.map((s) => s.id),
      ['b', 'c'],
    );
    engine.checkInvariants();
  });
});

describe('engine: an adopt rule never stalls an idle engine', () => {
  it('admits the head when nothing decodes, whatever the rule says', () => {
    const seen: [string, string[], number][] = [];
    const refuseAll: QueuePolicy = {
      ...createFcfsPolicy(),
      admitAdopted: (candidate: DecodingRequest, running: readonly DecodingRequest[], ctx) => {
        seen.push([candidate.id, running.map((r) => r.id), ctx.freeKvTokens]);
        return false;
      },
    };
    const engine = new Engine({ costModel: simpleCostModel(1000), role: 'decode', queuePolicy: refuseAll });
    engine.adopt({ id: 'a', tokens: seq(100, 1), outputTokens: 3 }, { kvTokens: 100, generated: 1 }, 0);
    engine.adopt({ id: 'b', tokens: seq(100, 500), outputTokens: 3 }, { kvTokens: 100, generated: 1 }, 0);
    const first = engine.step(0);
    assert.deepEqual(
      first.events.started.map((s) => s.id),
      ['a'],
    );
    // a was admitted without asking; b was asked (a decoding) and refused.
    assert.deepEqual(seen, [['b', ['a'], 900]]);
  });
});
