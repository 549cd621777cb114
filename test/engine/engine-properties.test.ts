import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { queuePolicyNames } from '../../src/core/replica-queue/registry.ts';
import { Engine } from '../../src/engine/engine.ts';
import { promptHash, withOutputs } from '../../src/engine/output-tokens.ts';
import { concat, drive, linearCost, type StepRecord, seq, type TimedRequest } from './helpers.ts';

interface Scenario {
  readonly capacity: number;
  readonly budget: number;
  readonly maxRunning: number;
  readonly policy: (typeof queuePolicyNames)[number];
  readonly chunking: boolean;
  readonly exclusive: boolean;
  readonly minEviction: number;
  readonly prefixLengths: readonly number[];
  readonly requests: readonly {
    readonly prefix: number;
    readonly suffix: number;
    readonly output: number;
    readonly slack: number;
    readonly gap: number;
    readonly repeat: number | null;
  }[];
}

const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  capacity: fc.integer({ min: 300, max: 1500 }),
  budget: fc.integer({ min: 8, max: 300 }),
  maxRunning: fc.integer({ min: 1, max: 12 }),
  policy: fc.constantFrom(...queuePolicyNames),
  chunking: fc.boolean(),
  exclusive: fc.boolean(),
  minEviction: fc.constantFrom(1, 16, 256),
  prefixLengths: fc.array(fc.integer({ min: 1, max: 150 }), { minLength: 3, maxLength: 3 }),
  requests: fc.array(
    fc.record({
      prefix: fc.integer({ min: 0, max: 3 }), // 0: none, else one of the shared prefixes
      suffix: fc.integer({ min: 1, max: 80 }),
      output: fc.integer({ min: 1, max: 60 }),
      // max_tokens beyond the true output (no-preempt reserves it; the default 1024 could not fit).
      slack: fc.integer({ min: 0, max: 40 }),
      gap: fc.integer({ min: 0, max: 4 }),
      repeat: fc.option(fc.nat(), { nil: null }), // the same prompt as an earlier request
    }),
    { minLength: 1, maxLength: 30 },
  ),
});

function requestsOf(s: Scenario): TimedRequest[] {
  const out: TimedRequest[] = [];
  let arrival = 0;
  s.requests.forEach((r, i) => {
    arrival += r.gap * 0.05;
    const earlier = r.repeat !== null && out.length > 0 ? out[r.repeat % out.length]! : undefined;
    const prefix =
      r.prefix === 0 ? new Uint32Array(0) : seq(s.prefixLengths[r.prefix - 1]!, 100_000 * r.prefix);
    const tokens = earlier?.tokens ?? concat(prefix, seq(r.suffix, 1_000_000 + 1000 * i));
    // The slack stops where prompt + max_tokens would pass the capacity: the engine refuses such a
    // request outright (no-preempt could never admit it), which is not what this stream tests.
    const maxTokens = Math.min(r.output + r.slack, s.capacity - tokens.length);
    out.push({ id: `q${i}`, tokens, outputTokens: r.output, maxTokens, arrival });
  });
  return out;
}

function engineFor(s: Scenario): Engine {
  return new Engine({
    costModel: linearCost({ a: 0.02, b: 0.001, c: 0.0001, d: 0 }, s.capacity),
    queuePolicy: s.policy,
    chunkedPrefillTokens: s.budget,
    maxRunning: s.maxRunning,
    enableChunking: s.chunking,
    minEvictionTokens: s.minEviction,
    exclusivePrefixes: s.exclusive,
  });
}

interface Episode {
  readonly target: number;
  readonly cached: number;
  computed: number;
  complete: boolean;
}

function sameStart(a: Uint32Array, b: Uint32Array, length: number): boolean {
  for (let i = 0; i < length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Runs a scenario checking memory, pins and token accounting after every step; returns the steps. */
function checkScenario(s: Scenario): StepRecord[] {
  const requests = requestsOf(s);
  const byId = new Map(requests.map((r) => [r.id, r]));
  const full = new Map(
    requests.map((r) => [r.id, withOutputs(r.tokens, promptHash(r.tokens), r.outputTokens)]),
  );
  const episodes = new Map<string, Episode[]>();
  const produced = new Map<string, number>();
  const started = new Map<string, number>();
  const firsts = new Map<string, number>();
  const finished = new Map<string, number>();
  let pinnedAtStart = new Map<string, number>();
  const engine = engineFor(s);

  const log = drive(engine, requests, (record, e) => {
    e.checkInvariants();
    const usage = e.kvUsage();
    assert.ok(usage.usedTokens <= s.capacity, 'KV used within capacity');
    const ev = record.iteration.events;
    if (s.policy === 'no-preempt') assert.equal(ev.preempted.length, 0);

    // Evictions never touch a pinned prefix: that of a request running at the step's start and not
    // preempted in it, or of one admitted in it (pinned before the admission's evictions).
    const preempted = new Set(ev.preempted);
    const pinned: [string, number][] = [...pinnedAtStart].filter(([id]) => !preempted.has(id));
    for (const item of record.batch) if (item.joined) pinned.push([item.id, item.cachedTokens]);
    for (const eviction of ev.evictions) {
      assert.ok(eviction.keptTokens >= 0 && eviction.keptTokens < eviction.path.length);
      for (const [id, p] of pinned) {
        const covered =
          p > eviction.keptTokens && sameStart(full.get(id)!, eviction.path, eviction.keptTokens + 1);
        assert.ok(!covered, `eviction of a prefix ${id} pins`);
      }
    }

    // Prefill accounting per admission episode.
    for (const item of record.batch) {
      const list = episodes.get(item.id) ?? [];
      episodes.set(item.id, list);
      if (item.phase === 'decode') {
        produced.set(item.id, (produced.get(item.id) ?? 0) + 1);
        continue;
      }
      if (item.joined) {
        const before = produced.get(item.id) ?? 0;
        assert.equal(
          item.targetTokens,
          byId.get(item.id)!.tokens.length + before,
          'recompute prompt + output so far',
        );
        list.push({ target: item.targetTokens, cached: item.cachedTokens, computed: 0, complete: false });
      }
      const episode = list[list.length - 1]!;
      episode.computed += item.newTokens;
      const needed = Math.max(1, episode.target - episode.cached);
      assert.ok(episode.computed <= needed);
      if (episode.computed === needed) {
        episode.complete = true;
        produced.set(item.id, (produced.get(item.id) ?? 0) + 1);
      }
    }
    for (const x of ev.started) started.set(x.id, (started.get(x.id) ?? 0) + 1);
    for (const id of ev.firstTokens) firsts.set(id, (firsts.get(id) ?? 0) + 1);
    for (const f of ev.finished) {
      finished.set(f.id, (finished.get(f.id) ?? 0) + 1);
      const r = byId.get(f.id)!;
      const last = episodes.get(f.id)!.at(-1)!;
      assert.ok(last.complete);
      assert.deepEqual(f, {
        id: f.id,
        promptTokens: r.tokens.length,
        cachedTokens: Math.min(last.cached, r.tokens.length),
        outputTokens: r.outputTokens,
      });
      assert.equal(produced.get(f.id), r.outputTokens);
    }
    pinnedAtStart = new Map();
    for (const id of byId.keys()) {
      const info = e.request(id);
      if (info !== undefined && info.phase !== 'waiting') pinnedAtStart.set(id, info.pinnedTokens);
    }
  });

  for (const r of requests) {
    assert.equal(finished.get(r.id), 1, `${r.id} finishes exactly once`);
    assert.equal(started.get(r.id), 1);
    assert.equal(firsts.get(r.id), 1);
    const list = episodes.get(r.id)!;
    // Tokens computed + tokens from cache = prompt tokens (a fully cached prompt recomputes one).
    const first = list[0]!;
    if (list.length === 1)
      assert.equal(
        first.computed + first.cached,
        r.tokens.length + (first.cached === r.tokens.length ? 1 : 0),
      );
  }
  const usage = engine.kvUsage();
  assert.deepEqual([usage.privateTokens, usage.pinnedTokens, usage.reservedTokens], [0, 0, 0]);
  const snapshot = engine.snapshot();
  assert.equal(
    snapshot.promptTokensTotal,
    requests.reduce((n, r) => n + r.tokens.length, 0),
  );
  assert.equal(
    snapshot.generationTokensTotal,
    requests.reduce((n, r) => n + r.outputTokens, 0),
  );
  return log.steps;
}

describe('Engine properties', () => {
  it('memory, pins, prefill accounting and finishes hold on random streams', () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        checkScenario(s);
      }),
      { numRuns: 300 },
    );
  });

  it('preemption happens under pressure (the generator reaches it)', () => {
    let preemptions = 0;
    let evictions = 0;
    fc.assert(
      fc.property(scenarioArb, (s) => {
        for (const step of checkScenario(s)) {
          preemptions += step.iteration.events.preempted.length;
          evictions += step.iteration.events.evictions.length;
        }
      }),
      { numRuns: 100 },
    );
    assert.ok(preemptions > 0 && evictions > 0);
  });

  it('aborts free everything and the others still finish', () => {
    fc.assert(
      fc.property(
        scenarioArb,
        fc.array(fc.tuple(fc.nat(), fc.nat({ max: 40 })), { maxLength: 8 }),
        (s, aborts) => {
          const requests = requestsOf(s);
          const engine = engineFor(s);
          const aborted = new Set<string>();
          const finished: string[] = [];
          let step = 0;
          drive(engine, requests, (record, e) => {
            for (const f of record.iteration.events.finished) finished.push(f.id);
            for (const [which, at] of aborts) {
              const id = requests[which % requests.length]!.id;
              if (at === step && e.abort(id)) aborted.add(id);
            }
            step++;
            e.checkInvariants();
          });
          assert.equal(finished.length, new Set(finished).size);
          assert.deepEqual([...finished, ...aborted].sort(), requests.map((r) => r.id).sort());
          const usage = engine.kvUsage();
          assert.deepEqual([usage.privateTokens, usage.pinnedTokens, usage.reservedTokens], [0, 0, 0]);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('is deterministic: the same stream gives the same iterations', () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const run = () => drive(engineFor(s), requestsOf(s)).steps;
        assert.deepEqual(run(), run());
      }),
      { numRuns: 50 },
    );
  });
});
