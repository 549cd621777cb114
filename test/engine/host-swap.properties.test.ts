import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { Engine } from '../../src/engine/engine.ts';
import { concat, linearCost, seq } from './helpers.ts';

/**
 * GPU and host memory accounting with a host KV pool, over random sequences of submits, steps and
 * aborts: preemptions swap decoding requests to the host while it has room (else recompute), and
 * policies with `preemptFor` (fastserve, splitwise-mixed) preempt for waiting prompts too.
 */
const opArb = fc.oneof(
  {
    arbitrary: fc.record({
      kind: fc.constant('submit' as const),
      prefix: fc.integer({ min: 0, max: 2 }),
      suffix: fc.integer({ min: 1, max: 90 }),
      output: fc.integer({ min: 1, max: 120 }),
    }),
    weight: 5,
  },
  {
    arbitrary: fc.record({ kind: fc.constant('step' as const), n: fc.integer({ min: 1, max: 3 }) }),
    weight: 3,
  },
  { arbitrary: fc.record({ kind: fc.constant('abort' as const), pick: fc.nat() }), weight: 1 },
);

const scenarioArb = fc.record({
  capacity: fc.integer({ min: 160, max: 400 }),
  host: fc.constantFrom(0, 60, 200, 100_000),
  policy: fc.constantFrom('fcfs', 'fastserve', 'splitwise-mixed', 'lpm', 'larry'),
  // A decode-role engine takes requests by adopting their KV, and can only swap.
  decodeRole: fc.boolean(),
  budget: fc.integer({ min: 16, max: 256 }),
  maxRunning: fc.integer({ min: 1, max: 10 }),
  quantum: fc.integer({ min: 1, max: 8 }),
  ops: fc.array(opArb, { minLength: 1, maxLength: 60 }),
});

describe('engine host KV pool (properties)', () => {
  it('conserves GPU and host memory, and every request not aborted finishes once with all its tokens', () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const engine = new Engine({
          costModel: linearCost({ a: 0.01, b: 0.001, c: 0, d: 0 }, s.capacity),
          queuePolicy: s.policy,
          queuePolicyOptions: { quantumTokens: s.quantum, prefillTokensPerStep: 16, starveSeconds: 0.5 },
          chunkedPrefillTokens: s.budget,
          maxRunning: s.maxRunning,
          minEvictionTokens: 1,
          hostKvTokens: s.host,
          ...(s.decodeRole ? { role: 'decode' as const } : {}),
          swapBandwidth: 1000,
        });
        const outputs = new Map<string, number>();
        const live = new Set<string>();
        const finished = new Map<string, number>();
        const generated = new Map<string, number>();
        let now = 0;
        let id = 0;
        const check = () => {
          engine.checkInvariants();
          const u = engine.kvUsage();
          assert.ok(u.usedTokens <= s.capacity);
          assert.ok(u.hostTokens <= s.host);
        };
        const step = () => {
          const it = engine.step(now);
          for (const item of engine.lastBatch()) {
            if (item.phase === 'decode') generated.set(item.id, (generated.get(item.id) ?? 0) + 1);
          }
          for (const f of it.events.finished) {
            finished.set(f.id, (finished.get(f.id) ?? 0) + 1);
            live.delete(f.id);
            assert.equal(f.outputTokens, outputs.get(f.id));
          }
          now += it.duration;
          check();
        };
        for (const op of s.ops) {
          if (op.kind === 'submit') {
            const prefix = op.prefix === 0 ? new Uint32Array(0) : seq(40, 10_000 * op.prefix);
            const tokens = concat(prefix, seq(op.suffix, 1_000_000 + 1000 * id));
            if (tokens.length + op.output > s.capacity) continue;
            const rid = `r${id++}`;
            if (!s.decodeRole) engine.submit({ id: rid, tokens, outputTokens: op.output }, now);
            else if (op.output >= 2)
              engine.adopt(
                { id: rid, tokens, outputTokens: op.output },
                { kvTokens: tokens.length, generated: 1 },
                now,
              );
            else continue;
            outputs.set(rid, op.output);
            live.add(rid);
          } else if (op.kind === 'step') {
            for (let i = 0; i < op.n; i++) step();
          } else if (live.size > 0) {
            const victim = [...live][op.pick % live.size]!;
            assert.equal(engine.abort(victim), true);
            live.delete(victim);
          }
          check();
        }
        let guard = 0;
        while (engine.hasWork()) {
          step();
          assert.ok(guard++ < 20_000, 'drains');
        }
        assert.equal(live.size, 0, 'every live request finished');
        for (const n of finished.values()) assert.equal(n, 1);
        const u = engine.kvUsage();
        assert.deepEqual([u.privateTokens, u.pinnedTokens, u.hostTokens, u.incomingTokens], [0, 0, 0, 0]);
        if (s.host === 0)
          assert.equal(engine.swapStats().swapOuts, 0, 'no pool: untimed swaps or recomputation');
        const swaps = engine.swapStats();
        assert.ok(swaps.swapIns <= swaps.swapOuts);
      }),
      { numRuns: 150 },
    );
  });
});
