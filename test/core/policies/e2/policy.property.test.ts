import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { E2Policy } from '../../../../src/core/policies/e2/policy.ts';
import { simpleCostModel } from '../../../helpers/simple-cost-model.ts';

type Op =
  | { kind: 'route'; prefix: number; suffix: number[] }
  | { kind: 'start' | 'finish' | 'fail'; pick: number }
  | { kind: 'evict'; instance: number; kept: number; pick: number }
  | { kind: 'drain' | 'remove' | 'add'; instance: number }
  | { kind: 'tick'; advance: number };

const INSTANCES = 4;
const instance = fc.integer({ min: 0, max: INSTANCES - 1 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('route' as const),
      prefix: fc.integer({ min: 0, max: 3 }),
      suffix: fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 6 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constantFrom('start' as const, 'finish' as const, 'fail' as const),
      pick: fc.nat(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('evict' as const), instance, kept: fc.nat(20), pick: fc.nat() }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constantFrom('drain' as const, 'remove' as const, 'add' as const),
      instance,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('tick' as const),
      advance: fc.double({ min: 0, max: 100, noNaN: true }),
    }),
  },
);

/** Shared prefixes of different lengths so that exploit, explore and eviction all happen. */
const PREFIXES = [8, 12, 3, 16].map((len, p) => Array.from({ length: len }, (_, i) => 100 * (p + 1) + i));

test('E2 keeps its accounting exact through any mix of routing, feedback, evictions, churn and time', () => {
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 80 }), fc.boolean(), (ops, smallMemory) => {
      const p = new E2Policy({ costModel: simpleCostModel(), windowSeconds: 60, rebalanceInterval: 0 });
      const capacity = smallMemory ? 24 : Number.POSITIVE_INFINITY;
      for (let i = 0; i < INSTANCES; i++) p.instanceAdded(i, { kvCapacityTokens: capacity }, 0);
      const inflight: { id: string; instance: number; tokens: Uint32Array }[] = [];
      const routed: Uint32Array[] = [];
      let now = 0;
      let n = 0;
      for (const op of ops) {
        now += 0.5;
        switch (op.kind) {
          case 'route': {
            const tokens = Uint32Array.from([...PREFIXES[op.prefix]!, ...op.suffix]);
            const id = `r${n++}`;
            let d: ReturnType<typeof p.route>;
            try {
              d = p.route({ id, tokens, arrival: now }, now);
            } catch (e) {
              assert.match(String(e), /no instance/);
              break;
            }
            assert.ok(d.matchedTokens >= 0 && d.matchedTokens <= tokens.length);
            assert.ok(d.costs.some((c) => c.instance === d.instance) || d.branch === 'phase-mix');
            inflight.push({ id, instance: d.instance, tokens });
            routed.push(tokens);
            break;
          }
          case 'start':
          case 'finish':
          case 'fail': {
            if (inflight.length === 0) break;
            const at = op.pick % inflight.length;
            const r = inflight[at]!;
            if (op.kind === 'start') p.requestStarted(r.id, now);
            else {
              inflight.splice(at, 1);
              if (op.kind === 'finish')
                p.requestFinished(r.id, now, {
                  promptTokens: r.tokens.length,
                  cachedTokens: 1,
                  outputTokens: 3,
                });
              else p.requestFailed(r.id, now);
            }
            break;
          }
          case 'evict': {
            if (routed.length === 0) break;
            const path = routed[op.pick % routed.length]!;
            p.instanceEvicted(op.instance, path, op.kept % Math.max(1, path.length), now);
            break;
          }
          case 'drain':
            p.instanceDrained(op.instance, now);
            break;
          case 'remove':
            p.instanceRemoved(op.instance, now);
            break;
          case 'add':
            p.instanceAdded(op.instance, { kvCapacityTokens: capacity }, now);
            break;
          case 'tick':
            now += op.advance;
            p.tick(now);
            break;
        }
        p.tree.checkInvariants();
        // Tick work reads incremental per-leaf sums: they equal a full recomputation over the window.
        p.checkIncrementalState();
        for (let i = 0; i < INSTANCES; i++) {
          assert.equal(p.inflight(i), inflight.filter((r) => r.instance === i).length, `in flight on ${i}`);
          assert.ok(p.loadOf(i) >= 0);
        }
      }
      for (const r of inflight)
        p.requestFinished(r.id, now, { promptTokens: 1, cachedTokens: 0, outputTokens: 1 });
      p.tick(now + 61);
      assert.equal(p.windowSize, 0);
      for (let i = 0; i < INSTANCES; i++) {
        assert.equal(p.inflight(i), 0);
        assert.equal(p.loadOf(i), 0);
        p.instanceRemoved(i, now + 62);
      }
      assert.equal(p.tree.nodeCount, 0, 'nothing outlives the window, the in-flight requests and the caches');
    }),
    { numRuns: 200 },
  );
});
