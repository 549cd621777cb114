import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Engine } from '../../src/engine/engine.ts';
import { linearCost, seq } from './helpers.ts';

const cost = (capacity: number) => linearCost({ a: 1, b: 0, c: 0, d: 0 }, capacity);

/** An engine with request `id` (40-token prompt, `output` tokens) decoding after `steps` iterations. */
function decoding(id: string, output: number, steps: number, capacity = 200): Engine {
  const engine = new Engine({ costModel: cost(capacity), minEvictionTokens: 1 });
  engine.submit({ id, tokens: seq(40, 1), outputTokens: output }, 0);
  for (let i = 0; i < steps; i++) engine.step(i);
  return engine;
}

describe('engine live migration', () => {
  it('moves a decoding request: source frees its KV, destination decodes on from the same token', () => {
    const source = decoding('m', 20, 5);
    const destination = new Engine({ costModel: cost(200) });
    const before = source.request('m')!;
    assert.deepEqual([before.phase, before.generated, before.kvTokens], ['decode', 5, 44]);
    assert.deepEqual(destination.reserveIncoming(44), []);
    assert.equal(destination.kvUsage().incomingTokens, 44);
    source.suspend('m');
    assert.equal(source.hasWork(), false);
    source.checkInvariants();
    const kv = source.migrateOut('m');
    assert.deepEqual(kv, { kvTokens: 44, generated: 5, cachedTokens: 0 });
    assert.equal(source.request('m'), undefined);
    const usage = source.kvUsage();
    // Its prompt stays cached, unpinned; its output's KV is gone.
    assert.deepEqual([usage.privateTokens, usage.pinnedTokens, usage.cacheTokens], [0, 0, 40]);
    destination.releaseIncoming(44);
    destination.adoptMigrated({ id: 'm', tokens: seq(40, 1), outputTokens: 20 }, kv, 5);
    let generated = 0;
    let finished: number | undefined;
    for (let now = 5; destination.hasWork(); now++) {
      const it = destination.step(now);
      destination.checkInvariants();
      assert.deepEqual(it.events.started, [], 'it started on the source');
      generated += it.decodeTokens;
      for (const f of it.events.finished) {
        finished = f.outputTokens;
        assert.equal(f.cachedTokens, 0, "the source's cache hit");
      }
    }
    // 5 tokens on the source, the other 15 here: none lost, none twice.
    assert.equal(generated, 15);
    assert.equal(finished, 20);
  });

  it('refuses a reservation the destination cannot make, changing nothing', () => {
    const destination = decoding('busy', 50, 3, 100);
    const before = destination.kvUsage();
    assert.equal(destination.reserveIncoming(80), undefined);
    assert.deepEqual(destination.kvUsage(), before);
  });

  it('reserves by evicting unpinned cache, and stalls waiting work while the reservation holds memory', () => {
    const destination = decoding('old', 2, 5, 100);
    assert.equal(destination.kvUsage().evictableTokens, 41);
    const evicted = destination.reserveIncoming(90)!;
    assert.ok(evicted.length > 0);
    destination.submit({ id: 'new', tokens: seq(30, 500), outputTokens: 2 }, 6);
    const it = destination.step(6);
    assert.equal(it.duration, 0);
    assert.equal(destination.hasWork(), false, 'stalled until the reservation goes');
    destination.releaseIncoming(90);
    assert.equal(destination.hasWork(), true);
    destination.checkInvariants();
  });

  it('resumes a suspended request when the migration is aborted', () => {
    const source = decoding('m', 20, 5);
    source.suspend('m');
    source.resume('m');
    source.checkInvariants();
    let done = 0;
    for (let now = 5; source.hasWork(); now++) done += source.step(now).events.finished.length;
    assert.equal(done, 1);
  });

  it('refuses to suspend or migrate what is not decoding', () => {
    const engine = new Engine({ costModel: cost(200) });
    engine.submit({ id: 'w', tokens: seq(40, 1), outputTokens: 5 }, 0);
    assert.throws(() => engine.suspend('w'), /cannot suspend 'w'/);
    assert.throws(() => engine.migrateOut('w'), /cannot migrate 'w'/);
    assert.throws(() => engine.resume('w'), /cannot resume 'w'/);
    assert.throws(() => engine.releaseIncoming(1), /releasing 1/);
  });

  it('aborting a suspended request frees its KV', () => {
    const source = decoding('m', 20, 5);
    source.suspend('m');
    assert.equal(source.abort('m'), true);
    source.checkInvariants();
    assert.equal(source.kvUsage().privateTokens, 0);
  });
});
