import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { E2PlusPolicy } from '../../../../src/core/policies/e2-plus/policy.ts';
import { simpleCostModel } from '../../../helpers/simple-cost-model.ts';

const INSTANCES = 3;
const PREFIXES = [8, 12, 3].map((len, p) => Array.from({ length: len }, (_, i) => 100 * (p + 1) + i));

type Op =
  | { kind: 'route'; prefix: number; suffix: number[] }
  | { kind: 'start' | 'first' | 'finish' | 'fail'; pick: number }
  | { kind: 'evict'; instance: number; pick: number }
  | { kind: 'tick'; advance: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant('route' as const),
    prefix: fc.integer({ min: 0, max: 2 }),
    suffix: fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 5 }),
  }),
  fc.record({
    kind: fc.constantFrom('start' as const, 'first' as const, 'finish' as const, 'fail' as const),
    pick: fc.nat(),
  }),
  fc.record({
    kind: fc.constant('evict' as const),
    instance: fc.integer({ min: 0, max: INSTANCES - 1 }),
    pick: fc.nat(),
  }),
  fc.record({ kind: fc.constant('tick' as const), advance: fc.double({ min: 0, max: 50, noNaN: true }) }),
);

test('e2-plus: queued and window prefill never go negative and return to zero once nothing is in flight and the window has passed; the window empties', () => {
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 60 }), fc.boolean(), (ops, small) => {
      const p = new E2PlusPolicy({ costModel: simpleCostModel(), windowSeconds: 30 });
      for (let i = 0; i < INSTANCES; i++)
        p.instanceAdded(i, { kvCapacityTokens: small ? 20 : Number.POSITIVE_INFINITY }, 0);
      const inflight: { id: string; tokens: Uint32Array }[] = [];
      let now = 0;
      let n = 0;
      for (const op of ops) {
        now += 0.25;
        if (op.kind === 'route') {
          const tokens = Uint32Array.from([...PREFIXES[op.prefix]!, ...op.suffix]);
          const id = `q${n++}`;
          p.route({ id, tokens, arrival: now }, now);
          inflight.push({ id, tokens });
        } else if (op.kind === 'tick') {
          now += op.advance;
          p.tick(now);
        } else if (op.kind === 'evict') {
          if (inflight.length > 0)
            p.instanceEvicted(op.instance, inflight[op.pick % inflight.length]!.tokens, 0, now);
        } else if (inflight.length > 0) {
          const at = op.pick % inflight.length;
          const r = inflight[at]!;
          if (op.kind === 'start') p.requestStarted(r.id, now);
          else if (op.kind === 'first') p.requestFirstToken(r.id, now);
          else {
            inflight.splice(at, 1);
            if (op.kind === 'finish')
              p.requestFinished(r.id, now, {
                promptTokens: r.tokens.length,
                cachedTokens: 2,
                outputTokens: 3,
              });
            else p.requestFailed(r.id, now);
          }
        }
        p.tree.checkInvariants();
        for (let i = 0; i < INSTANCES; i++) {
          assert.ok(p.queuedPrefillOf(i) >= 0);
          assert.ok(p.windowPrefillOf(i) >= 0);
        }
      }
      for (const r of inflight)
        p.requestFinished(r.id, now, { promptTokens: 1, cachedTokens: 0, outputTokens: 1 });
      for (let i = 0; i < INSTANCES; i++) {
        assert.equal(p.queuedPrefillOf(i), 0, `queued prefill on ${i}`);
        assert.equal(p.inflight(i), 0);
      }
      p.tick(now + 31);
      for (let i = 0; i < INSTANCES; i++) assert.equal(p.windowPrefillOf(i), 0, `window prefill on ${i}`);
      for (let i = 0; i < INSTANCES; i++) p.instanceRemoved(i, now + 32);
      assert.equal(p.tree.nodeCount, 0, 'nothing outlives the window, the in-flight requests and the caches');
    }),
    { numRuns: 150 },
  );
});
