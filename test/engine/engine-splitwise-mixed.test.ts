import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Engine } from '../../src/engine/engine.ts';
import { drive, EASY, linearCost, seq, type TimedRequest } from './helpers.ts';

describe('Engine: prompts first (splitwise-mixed)', () => {
  // 1,000 KV tokens. Two long decodes (d1, d2) hold ~230 of them when each 780-token prompt arrives.
  const stream: TimedRequest[] = [
    { id: 'd1', tokens: seq(100, 1), outputTokens: 30, arrival: 0 },
    { id: 'd2', tokens: seq(100, 1000), outputTokens: 30, arrival: 1 },
    { id: 'p', tokens: seq(780, 5000), outputTokens: 1, arrival: 5 },
    { id: 'p2', tokens: seq(780, 9000), outputTokens: 1, arrival: 16 },
    { id: 'p3', tokens: seq(780, 13000), outputTokens: 1, arrival: 21 },
    { id: 'p4', tokens: seq(780, 17000), outputTokens: 1, arrival: 26 },
  ];
  const run = (queuePolicy: 'fcfs' | 'splitwise-mixed') => {
    const engine = new Engine({ costModel: linearCost(EASY, 1000), queuePolicy });
    const events: string[] = [];
    const log = drive(engine, stream, (record, e) => {
      e.checkInvariants();
      const ev = record.iteration.events;
      if (ev.preempted.length > 0)
        events.push(`${ev.preempted.join(',')} for ${ev.started.map((s) => s.id)}`);
    });
    const usage = engine.kvUsage();
    assert.deepEqual([usage.privateTokens, usage.pinnedTokens, usage.reservedTokens], [0, 0, 0]);
    assert.equal(log.finish.size, stream.length);
    return { log, events, preemptions: engine.snapshot().preemptionsTotal };
  };

  it('preempts the youngest decode for a prompt, never one at the cap, memory conserved', () => {
    const { log, events, preemptions } = run('splitwise-mixed');
    // p fits beside the decodes. p2 preempts d2 (the younger); p3 preempts d1, d2 being at the cap of
    // 1 since its readmission; p4 finds both at the cap and waits for d1 to finish.
    assert.deepEqual(events, ['d2 for p2', 'd1 for p3']);
    assert.equal(preemptions, 2);
    assert.ok(log.firstToken.get('p2')! < 19, 'p2 is served at once');
    assert.ok(log.firstToken.get('p3')! < 25, 'p3 is served at once');
    assert.ok(log.firstToken.get('p4')! > log.finish.get('d1')!, 'p4 waits: no victim left');
  });

  it('fcfs on the same stream preempts nothing and makes the prompts wait', () => {
    const { log, events } = run('fcfs');
    assert.deepEqual(events, []);
    assert.ok(log.firstToken.get('p2')! > log.finish.get('d1')!);
  });
});
