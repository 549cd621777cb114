import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { queuePolicyNames } from '../../src/core/replica-queue/registry.ts';
import type { Role } from '../../src/core/types.ts';
import { Engine } from '../../src/engine/engine.ts';
import type { EngineKvReady, EngineRequest, Iteration } from '../../src/engine/types.ts';
import { concat, linearCost, seq } from './helpers.ts';

/**
 * Two engines on one virtual clock: a prefill side (role prefill, or mixed also running some
 * requests whole) and a decode side (role decode, or mixed) joined by KV transfers of random length.
 * Requests are aborted at random times at every stage (waiting, prefilling, holding, in transfer,
 * waiting to be adopted, decoding), a transfer may fail (the held KV is dropped) and a release may
 * be repeated. Memory is small enough for preemption (swaps on a decode engine) and stalls.
 */
interface Scenario {
  readonly prefillRole: Role;
  readonly decodeRole: Role;
  readonly prefillCapacity: number;
  readonly decodeCapacity: number;
  readonly prefillPolicy: (typeof queuePolicyNames)[number];
  readonly decodePolicy: (typeof queuePolicyNames)[number];
  readonly budget: number;
  readonly maxRunning: number;
  readonly minEviction: number;
  readonly prefixLengths: readonly number[];
  readonly requests: readonly {
    readonly prefix: number;
    readonly suffix: number;
    readonly output: number;
    readonly slack: number;
    readonly gap: number;
    /** On a mixed prefill engine: run it whole there instead. */
    readonly whole: boolean;
    /** Seconds from the KV being ready to its arrival; null: the transfer fails. */
    readonly transfer: number | null;
    /** Release the prefill side's KV before adopting it (else after), and release it twice. */
    readonly releaseFirst: boolean;
    readonly releaseTwice: boolean;
    /** Abort at this many seconds after arrival (wherever it is then), or never. */
    readonly abortAfter: number | null;
  }[];
}

const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  prefillRole: fc.constantFrom<Role>('prefill', 'mixed'),
  decodeRole: fc.constantFrom<Role>('decode', 'mixed'),
  prefillCapacity: fc.integer({ min: 330, max: 1200 }),
  // Mostly tight: decode growth outruns memory (preemption, swaps).
  decodeCapacity: fc.oneof(
    { arbitrary: fc.integer({ min: 330, max: 450 }), weight: 3 },
    { arbitrary: fc.integer({ min: 450, max: 900 }), weight: 1 },
  ),
  prefillPolicy: fc.constantFrom(...queuePolicyNames),
  decodePolicy: fc.constantFrom(...queuePolicyNames),
  budget: fc.integer({ min: 8, max: 300 }),
  maxRunning: fc.integer({ min: 1, max: 12 }),
  minEviction: fc.constantFrom(1, 16, 256),
  prefixLengths: fc.array(fc.integer({ min: 1, max: 150 }), { minLength: 3, maxLength: 3 }),
  requests: fc.array(
    fc.record({
      prefix: fc.integer({ min: 0, max: 3 }),
      suffix: fc.integer({ min: 1, max: 80 }),
      output: fc.integer({ min: 1, max: 60 }),
      slack: fc.integer({ min: 0, max: 40 }),
      gap: fc.integer({ min: 0, max: 4 }),
      whole: fc.boolean(),
      transfer: fc.oneof(
        { arbitrary: fc.integer({ min: 0, max: 20 }).map((k) => k * 0.01), weight: 10 },
        { arbitrary: fc.constant(null), weight: 1 },
      ),
      releaseFirst: fc.boolean(),
      releaseTwice: fc.boolean(),
      // Mostly never: an abort at a random time, wherever the request is then.
      abortAfter: fc.oneof(
        { arbitrary: fc.constant(null), weight: 5 },
        { arbitrary: fc.integer({ min: 0, max: 100 }).map((k) => k * 0.02), weight: 1 },
      ),
    }),
    { minLength: 1, maxLength: 30, size: 'max' },
  ),
});

/** Where a request is, as the test sees it. */
type Stage =
  | 'prefill-side' // waiting or running on the prefill engine
  | 'held' // its KV held on the prefill engine, in transfer
  | 'decode-side' // adopted: waiting for memory or decoding
  | 'finished'
  | 'aborted'
  | 'failed'; // its transfer failed

interface Ev {
  readonly time: number;
  readonly seq: number;
  readonly kind: 'arrive' | 'end' | 'transfer' | 'abort';
  readonly index: number;
}

interface Outcome {
  readonly stages: Map<string, Stage>;
  readonly preemptedOnDecode: number;
  readonly stalls: number;
  readonly held: number;
  readonly swapped: number;
}

function engineOf(s: Scenario, side: 'prefill' | 'decode'): Engine {
  const p = side === 'prefill';
  return new Engine({
    costModel: linearCost({ a: 0.02, b: 0.001, c: 0.0001, d: 0 }, p ? s.prefillCapacity : s.decodeCapacity),
    queuePolicy: p ? s.prefillPolicy : s.decodePolicy,
    chunkedPrefillTokens: s.budget,
    maxRunning: s.maxRunning,
    minEvictionTokens: s.minEviction,
    role: p ? s.prefillRole : s.decodeRole,
  });
}

/** Distinct tokens of a set of prompts seen as paths from a common root (what a prefix cache holds). */
function unionOfPaths(paths: readonly Uint32Array[]): number {
  const root = new Map<number, unknown>();
  let count = 0;
  for (const path of paths) {
    let node = root;
    for (const token of path) {
      let child = node.get(token) as Map<number, unknown> | undefined;
      if (child === undefined) {
        child = new Map();
        node.set(token, child);
        count++;
      }
      node = child;
    }
  }
  return count;
}

function run(s: Scenario): Outcome {
  const prefill = engineOf(s, 'prefill');
  const decode = engineOf(s, 'decode');
  const requests: EngineRequest[] = [];
  const arrivals: number[] = [];
  let t = 0;
  s.requests.forEach((r, i) => {
    t += r.gap * 0.05;
    const prefix =
      r.prefix === 0 ? new Uint32Array(0) : seq(s.prefixLengths[r.prefix - 1]!, 100_000 * r.prefix);
    requests.push({
      id: `q${i}`,
      tokens: concat(prefix, seq(r.suffix, 1_000_000 + 1000 * i)),
      outputTokens: r.output,
      maxTokens: r.output + r.slack,
    });
    arrivals.push(t);
  });

  const stages = new Map<string, Stage>();
  const ready = new Map<string, EngineKvReady>();
  const finishes = new Map<string, number>();
  const startsOnDecode = new Map<string, number>();
  const heldIds = new Set<string>();
  const events: Ev[] = [];
  let eventSeq = 0;
  const schedule = (time: number, kind: Ev['kind'], index: number) =>
    events.push({ time, seq: eventSeq++, kind, index });
  requests.forEach((_, i) => {
    schedule(arrivals[i]!, 'arrive', i);
    const after = s.requests[i]!.abortAfter;
    if (after !== null) schedule(arrivals[i]! + after, 'abort', i);
  });
  const engines = [prefill, decode] as const;
  const busy = [false, false];
  const indexOf = new Map(requests.map((r, i) => [r.id, i]));
  let preemptedOnDecode = 0;
  let stalls = 0;
  let held = 0;
  let swapped = 0;

  const finish = (
    id: string,
    side: 0 | 1,
    f: { promptTokens: number; cachedTokens: number; outputTokens: number },
  ) => {
    const r = requests[indexOf.get(id)!]!;
    finishes.set(id, (finishes.get(id) ?? 0) + 1);
    assert.equal(finishes.get(id), 1, `${id} finishes once`);
    const stage = stages.get(id);
    assert.equal(stage, side === 0 ? 'prefill-side' : 'decode-side', `${id} finishes where it is`);
    stages.set(id, 'finished');
    assert.equal(f.promptTokens, r.tokens.length);
    assert.equal(f.outputTokens, r.outputTokens);
    assert.ok(f.cachedTokens >= 0 && f.cachedTokens <= r.tokens.length);
    // Adopted: the prompt was computed elsewhere (a mixed engine may have recomputed it after a preemption).
    if (side === 1 && s.decodeRole === 'decode') assert.equal(f.cachedTokens, r.tokens.length);
  };

  const check = (side: 0 | 1, it: Iteration) => {
    const e = engines[side];
    e.checkInvariants();
    const usage = e.kvUsage();
    const snap = e.snapshot();
    // Memory: used + free = capacity, free never negative, what the snapshot says agrees.
    assert.equal(usage.usedTokens, usage.cacheTokens + usage.privateTokens);
    const free = usage.capacityTokens - usage.usedTokens;
    assert.ok(free >= 0, 'within capacity');
    assert.equal(usage.usedTokens + free, snap.kvCapacityTokens);
    assert.equal(snap.usedKvTokens, usage.pinnedTokens + usage.privateTokens);
    assert.equal(
      snap.freeKvTokens,
      Math.max(0, usage.capacityTokens - snap.usedKvTokens - usage.reservedTokens),
    );
    if (side === 0) {
      // Held KV is what the test believes is held, pinned, never evicted.
      const prompts = [...heldIds].map((id) => requests[indexOf.get(id)!]!.tokens);
      assert.equal(snap.heldRequests, heldIds.size);
      assert.equal(
        snap.heldKvTokens,
        prompts.reduce((n, p) => n + p.length, 0),
      );
      const union = unionOfPaths(prompts);
      assert.ok(usage.pinnedTokens >= union, 'held KV is pinned');
      if (snap.running === 0) assert.equal(usage.pinnedTokens, union);
    } else {
      assert.equal(snap.heldRequests, 0);
      if (s.decodeRole === 'decode') {
        assert.equal(it.prefillTokens, 0, 'a decode engine never prefills');
        for (const item of e.lastBatch()) assert.equal(item.phase, 'decode');
      }
    }
  };

  const kick = (side: 0 | 1, now: number) => {
    const e = engines[side];
    if (busy[side] || !e.hasWork()) return;
    const it = e.step(now);
    if (it.batchRequests === 0) {
      assert.equal(it.duration, 0);
      assert.equal(e.hasWork(), false, 'an idle step leaves the engine stalled');
      stalls++;
    } else {
      busy[side] = true;
      schedule(now + it.duration, 'end', side);
    }
    const ev = it.events;
    if (side === 1) {
      preemptedOnDecode += ev.preempted.length;
      if (s.decodeRole === 'decode') swapped += ev.preempted.length;
      for (const x of ev.started) {
        startsOnDecode.set(x.id, (startsOnDecode.get(x.id) ?? 0) + 1);
        assert.equal(startsOnDecode.get(x.id), 1, 'started once on the decode side, swapped or not');
        assert.equal(x.cachedTokens, requests[indexOf.get(x.id)!]!.tokens.length);
      }
      assert.deepEqual(ev.firstTokens, [], 'first tokens come from the prefill side');
    }
    for (const f of ev.finished) finish(f.id, side, f);
    for (const k of ev.kvReady) {
      assert.equal(side, 0);
      const r = requests[indexOf.get(k.id)!]!;
      assert.equal(stages.get(k.id), 'prefill-side');
      assert.ok(ev.firstTokens.includes(k.id), 'the prefill leg yields the first token');
      assert.deepEqual([k.kvTokens, k.generated, k.path], [r.tokens.length, 1, r.tokens]);
      stages.set(k.id, 'held');
      heldIds.add(k.id);
      ready.set(k.id, k);
      held++;
      const delay = s.requests[indexOf.get(k.id)!]!.transfer;
      schedule(now + it.duration + (delay ?? 0.05), 'transfer', indexOf.get(k.id)!);
    }
    check(side, it);
  };

  const release = (id: string) => {
    assert.equal(prefill.releaseKv(id), true);
    heldIds.delete(id);
  };

  let steps = 0;
  while (events.length > 0) {
    events.sort((a, b) => a.time - b.time || a.seq - b.seq);
    const ev = events.shift()!;
    const now = ev.time;
    if (++steps > 200_000) throw new Error('too many events');
    if (ev.kind === 'end') {
      busy[ev.index] = false;
    } else {
      const spec = s.requests[ev.index]!;
      const r = requests[ev.index]!;
      if (ev.kind === 'arrive') {
        stages.set(r.id, 'prefill-side');
        const whole = s.prefillRole === 'mixed' && spec.whole;
        prefill.submit(r, now, { stopAfterPrefill: !whole });
      } else if (ev.kind === 'transfer') {
        if (stages.get(r.id) === 'held') {
          if (spec.transfer === null) {
            // The transfer failed: the prefill side drops the KV; the request is lost to this journey.
            assert.equal(prefill.abort(r.id), true);
            heldIds.delete(r.id);
            stages.set(r.id, 'failed');
          } else {
            if (spec.releaseFirst) release(r.id);
            decode.adopt(r, ready.get(r.id)!, now);
            if (!spec.releaseFirst) release(r.id);
            if (spec.releaseTwice) assert.equal(prefill.releaseKv(r.id), false);
            stages.set(r.id, 'decode-side');
          }
        }
      } else {
        const stage = stages.get(r.id);
        if (stage === 'prefill-side' || stage === 'held') {
          assert.equal(prefill.abort(r.id), true);
          heldIds.delete(r.id);
          stages.set(r.id, 'aborted');
        } else if (stage === 'decode-side') {
          assert.equal(decode.abort(r.id), true);
          stages.set(r.id, 'aborted');
        } else {
          assert.equal(prefill.abort(r.id) || decode.abort(r.id), false, 'nothing left of it');
        }
      }
    }
    kick(0, now);
    kick(1, now);
  }

  // No request lost: each ended exactly one way, and both engines hold nothing for anyone.
  for (const r of requests) {
    const stage = stages.get(r.id);
    assert.ok(stage === 'finished' || stage === 'aborted' || stage === 'failed', `${r.id} is ${stage}`);
    assert.equal(prefill.request(r.id), undefined);
    assert.equal(decode.request(r.id), undefined);
  }
  for (const e of engines) {
    assert.equal(e.hasWork(), false);
    const usage = e.kvUsage();
    assert.deepEqual(
      [usage.pinnedTokens, usage.privateTokens, usage.reservedTokens, usage.heldTokens],
      [0, 0, 0, 0],
    );
    const snap = e.snapshot();
    assert.deepEqual([snap.running, snap.waiting, snap.adoptWaiting, snap.heldRequests], [0, 0, 0, 0]);
  }
  const untouched = s.requests.every((r) => r.abortAfter === null && r.transfer !== null);
  if (untouched) {
    // Every token generated once: the first on the prefill side, the rest where they ran.
    const total = requests.reduce((n, r) => n + r.outputTokens, 0);
    assert.equal(prefill.snapshot().generationTokensTotal + decode.snapshot().generationTokensTotal, total);
    assert.ok(requests.every((r) => stages.get(r.id) === 'finished'));
  }
  return { stages, preemptedOnDecode, stalls, held, swapped };
}

describe('Engine disaggregation properties', () => {
  it('memory is conserved across prefill, hold, release, adopt and finish, with failures at every stage', () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        run(s);
      }),
      { numRuns: 300 },
    );
  });

  it('the generator reaches swaps, recomputation, stalls, aborts and failed transfers', () => {
    let swapped = 0;
    let preempted = 0;
    let stalls = 0;
    let held = 0;
    const ends = new Map<Stage, number>();
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const o = run(s);
        swapped += o.swapped;
        preempted += o.preemptedOnDecode;
        stalls += o.stalls;
        held += o.held;
        for (const stage of o.stages.values()) ends.set(stage, (ends.get(stage) ?? 0) + 1);
      }),
      { numRuns: 150 },
    );
    assert.ok(swapped > 0, 'a decode engine swapped');
    assert.ok(preempted > swapped, 'a mixed decode side recomputed');
    assert.ok(stalls > 0, 'held KV stalled a prefill engine');
    assert.ok(held > 0);
    for (const stage of ['finished', 'aborted', 'failed'] as const)
      assert.ok((ends.get(stage) ?? 0) > 0, stage);
  });
});
