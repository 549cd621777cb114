import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { Engine } from '../../src/engine/engine.ts';
import { linearCost, seq } from './helpers.ts';

const cost = (capacity: number) => linearCost({ a: 1, b: 0, c: 0, d: 0 }, capacity);

describe('engine queued move (withdraw)', () => {
  it('takes a waiting request that never started off the queue; another engine runs it whole', () => {
    const source = new Engine({ costModel: cost(200), maxRunning: 1 });
    source.submit({ id: 'a', tokens: seq(40, 1), outputTokens: 5 }, 0);
    source.submit({ id: 'b', tokens: seq(30, 100), outputTokens: 4 }, 0);
    source.step(0); // 'a' admitted; one running at most, so 'b' waits
    const before = source.kvUsage();
    assert.equal(source.withdraw('b'), true);
    assert.equal(source.request('b'), undefined);
    assert.deepEqual(source.kvUsage(), before, 'a waiting request holds no memory');
    assert.equal(source.snapshot().waiting, 0);
    source.checkInvariants();
    const destination = new Engine({ costModel: cost(200) });
    destination.submit({ id: 'b', tokens: seq(30, 100), outputTokens: 4 }, 1);
    let finished = 0;
    for (let now = 1; destination.hasWork(); now++)
      for (const f of destination.step(now).events.finished) finished = f.outputTokens;
    assert.equal(finished, 4);
  });

  it('refuses a started request, a prefill-only leg and an unknown id, changing nothing', () => {
    const engine = new Engine({ costModel: cost(200), minEvictionTokens: 1 });
    engine.submit({ id: 'run', tokens: seq(40, 1), outputTokens: 5 }, 0);
    engine.submit({ id: 'leg', tokens: seq(20, 300), outputTokens: 5 }, 0, { stopAfterPrefill: true });
    engine.step(0);
    const before = engine.kvUsage();
    assert.equal(engine.withdraw('run'), false);
    assert.equal(engine.withdraw('nobody'), false);
    assert.equal(engine.request('run')?.phase, 'decode');
    assert.deepEqual(engine.kvUsage(), before);
    const legs = new Engine({ costModel: cost(200), maxRunning: 1 });
    legs.submit({ id: 'x', tokens: seq(10, 1), outputTokens: 2 }, 0);
    legs.submit({ id: 'leg', tokens: seq(20, 300), outputTokens: 5 }, 0, { stopAfterPrefill: true });
    legs.step(0);
    assert.equal(legs.request('leg')?.phase, 'waiting');
    assert.equal(legs.withdraw('leg'), false, 'its decode is bound to this KV');
  });

  it('refuses a request preempted back to the queue (it started)', () => {
    // Two requests grow into a 60-token memory: the later admitted is preempted and waits again.
    const engine = new Engine({ costModel: cost(60), minEvictionTokens: 1 });
    engine.submit({ id: 'a', tokens: seq(20, 1), outputTokens: 15 }, 0);
    engine.submit({ id: 'b', tokens: seq(20, 100), outputTokens: 15 }, 0);
    let preempted: string | undefined;
    for (let now = 0; preempted === undefined && engine.hasWork(); now++)
      preempted = engine.step(now).events.preempted[0];
    assert.ok(preempted !== undefined);
    assert.equal(engine.request(preempted)?.phase, 'waiting');
    assert.equal(engine.withdraw(preempted), false);
  });

  it('conserves memory: withdrawing never changes KV use, and every other request finishes once', () => {
    const op = fc.oneof(
      fc.record({
        kind: fc.constant('submit' as const),
        prompt: fc.integer({ min: 1, max: 60 }),
        output: fc.integer({ min: 1, max: 40 }),
      }),
      fc.record({ kind: fc.constant('step' as const) }),
      fc.record({ kind: fc.constant('withdraw' as const), pick: fc.nat() }),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 120, max: 300 }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(op, { maxLength: 50 }),
        (capacity, maxRunning, ops) => {
          const engine = new Engine({ costModel: cost(capacity), maxRunning, minEvictionTokens: 1 });
          const live = new Set<string>();
          const finished = new Set<string>();
          let n = 0;
          let now = 0;
          for (const o of ops) {
            if (o.kind === 'submit') {
              const id = `r${n++}`;
              engine.submit({ id, tokens: seq(o.prompt, 1000 * n), outputTokens: o.output }, now);
              live.add(id);
            } else if (o.kind === 'step') {
              for (const f of engine.step(now++).events.finished) {
                assert.ok(!finished.has(f.id));
                finished.add(f.id);
                live.delete(f.id);
              }
            } else if (live.size > 0) {
              const id = [...live][o.pick % live.size]!;
              const phase = engine.request(id)?.phase;
              const before = engine.kvUsage();
              const moved = engine.withdraw(id);
              assert.deepEqual(engine.kvUsage(), before);
              if (moved) {
                assert.equal(phase, 'waiting');
                live.delete(id);
              }
            }
            engine.checkInvariants();
          }
          while (engine.hasWork())
            for (const f of engine.step(now++).events.finished) {
              finished.add(f.id);
              live.delete(f.id);
            }
          assert.equal(live.size, 0, 'every request not withdrawn finished');
        },
      ),
      { numRuns: 150, seed: 14 },
    );
  });
});
