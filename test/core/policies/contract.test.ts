import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  createGlobalPolicy,
  disaggregatedPolicyNames,
  globalPolicyNames,
  parsePolicyList,
} from '../../../src/core/policies/registry.ts';
import { simpleCostModel } from '../../helpers/simple-cost-model.ts';

type Op =
  | { kind: 'route'; prefix: number; suffix: number[]; avoid: number[] }
  | { kind: 'finish' | 'fail' | 'first'; pick: number }
  | { kind: 'evict'; instance: number; kept: number; pick: number }
  | { kind: 'drain' | 'remove' | 'add'; instance: number }
  | { kind: 'signal'; instance: number; waiting: number }
  | { kind: 'tick'; advance: number };

const instance = fc.integer({ min: 0, max: 3 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('route' as const),
      prefix: fc.integer({ min: 0, max: 2 }),
      suffix: fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 5 }),
      avoid: fc.oneof(fc.constant<number[]>([]), fc.array(instance, { maxLength: 3 })),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constantFrom('finish' as const, 'fail' as const, 'first' as const),
      pick: fc.nat(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('evict' as const), instance, kept: fc.nat(10), pick: fc.nat() }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constantFrom('drain' as const, 'remove' as const, 'add' as const),
      instance,
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('signal' as const), instance, waiting: fc.nat(5) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('tick' as const),
      advance: fc.double({ min: 0, max: 50, noNaN: true }),
    }),
  },
);

for (const name of globalPolicyNames) {
  test(`${name}: routes only to active instances and releases every request exactly once`, () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 60 }), (ops) => {
        const policy = createGlobalPolicy(name, { costModel: simpleCostModel(64), seed: 7 });
        const active = new Set<number>();
        const present = new Set<number>();
        for (let i = 0; i < 4; i++) {
          policy.instanceAdded(i, { kvCapacityTokens: 64 }, 0);
          active.add(i);
          present.add(i);
        }
        const inflight: { id: string; instance: number; tokens: Uint32Array }[] = [];
        let now = 0;
        let n = 0;
        for (const op of ops) {
          now += 0.25;
          if (op.kind === 'route') {
            const tokens = Uint32Array.from([
              ...Array.from({ length: 6 }, (_, i) => 10 * op.prefix + i),
              ...op.suffix,
            ]);
            const id = `r${n++}`;
            const open = [...active].filter((i) => !op.avoid.includes(i));
            const view = (policy as unknown as { view: { active: readonly number[] } }).view;
            const before = [...view.active];
            if (open.length === 0) {
              assert.throws(
                () => policy.route({ id, tokens, arrival: now, avoid: op.avoid }, now),
                /no instance/,
              );
              assert.deepEqual([...view.active], before, 'avoiding closes instances for one decision only');
              continue;
            }
            const d = policy.route({ id, tokens, arrival: now, avoid: op.avoid }, now);
            assert.ok(open.includes(d.instance), `${name} routed to ${d.instance}, not one of ${open}`);
            assert.deepEqual([...view.active], before, 'avoiding closes instances for one decision only');
            assert.ok(d.matchedTokens >= 0 && d.matchedTokens <= tokens.length);
            assert.ok(policy.branches.includes(d.branch), `${name} took undeclared branch '${d.branch}'`);
            inflight.push({ id, instance: d.instance, tokens });
            policy.requestStarted(id, now);
          } else if (op.kind === 'finish' || op.kind === 'fail' || op.kind === 'first') {
            if (inflight.length === 0) continue;
            const at = op.pick % inflight.length;
            const r = inflight[at]!;
            if (op.kind === 'first') policy.requestFirstToken(r.id, now);
            else {
              inflight.splice(at, 1);
              if (op.kind === 'finish') {
                policy.requestFinished(r.id, now, {
                  promptTokens: r.tokens.length,
                  cachedTokens: 0,
                  outputTokens: 2,
                });
              } else policy.requestFailed(r.id, now);
            }
          } else if (op.kind === 'evict') {
            if (inflight.length > 0) {
              const path = inflight[op.pick % inflight.length]!.tokens;
              policy.instanceEvicted(op.instance, path, op.kept % path.length, now);
            }
          } else if (op.kind === 'drain') {
            policy.instanceDrained(op.instance, now);
            active.delete(op.instance);
          } else if (op.kind === 'remove') {
            policy.instanceRemoved(op.instance, now);
            active.delete(op.instance);
            present.delete(op.instance);
          } else if (op.kind === 'add') {
            policy.instanceAdded(op.instance, { kvCapacityTokens: 64 }, now);
            active.add(op.instance);
            present.add(op.instance);
          } else if (op.kind === 'signal') {
            if (present.has(op.instance)) {
              policy.loadSignal(
                op.instance,
                {
                  running: 1,
                  waiting: op.waiting,
                  queuedPrefillTokens: 10 * op.waiting,
                  usedKvTokens: 20,
                  freeKvTokens: 44,
                },
                now,
              );
            }
          } else if (op.kind === 'tick') {
            now += op.advance;
            policy.tick(now);
          }
        }
        for (const r of inflight) policy.requestFailed(r.id, now);
        for (const r of inflight) policy.requestFailed(r.id, now); // a repeated report changes nothing
        const base = policy as unknown as { inflight(i: number): number };
        for (let i = 0; i < 4; i++)
          assert.equal(base.inflight(i), 0, `${name}: in flight on ${i} after all ended`);
      }),
      { numRuns: 60 },
    );
  });
}

test('the registry builds every policy by name and rejects unknown names with the list', () => {
  for (const name of globalPolicyNames)
    assert.equal(createGlobalPolicy(name, { costModel: simpleCostModel() }).name, name);
  assert.throws(
    () => createGlobalPolicy('nope', { costModel: simpleCostModel() }),
    /valid policies: e2, round-robin/,
  );
  assert.deepEqual(parsePolicyList('e2, round-robin'), ['e2', 'round-robin']);
  assert.deepEqual(parsePolicyList('all'), [...globalPolicyNames]);
  assert.throws(() => parsePolicyList('e2,nope'), /unknown policy 'nope'/);
});

type DisaggOp =
  | { kind: 'route' }
  | { kind: 'kv-ready' | 'finish' | 'fail'; pick: number; avoid?: number }
  | { kind: 'drain' | 'add'; instance: number };

// The disaggregated side of the contract: a request is counted against its prefill instance from
// route, moved to its decode instance when the policy picks it, and released exactly once.
for (const name of disaggregatedPolicyNames) {
  test(`${name}: counts a request on its prefill instance, moves it to its decode instance, releases it once`, () => {
    const disaggOp: fc.Arbitrary<DisaggOp> = fc.oneof(
      { weight: 4, arbitrary: fc.constant({ kind: 'route' as const }) },
      {
        weight: 4,
        arbitrary: fc.record({
          kind: fc.constantFrom('kv-ready' as const, 'finish' as const, 'fail' as const),
          pick: fc.nat(),
          // A decode instance the pick must avoid (a retry after it refused the request as too long).
          avoid: fc.constantFrom(undefined, 2, 3),
        }),
      },
      {
        weight: 1,
        arbitrary: fc.record({ kind: fc.constantFrom('drain' as const, 'add' as const), instance }),
      },
    );
    fc.assert(
      fc.property(fc.array(disaggOp, { maxLength: 60 }), (ops) => {
        const policy = createGlobalPolicy(name, { costModel: simpleCostModel(64), seed: 7 });
        const roles = ['prefill', 'prefill', 'decode', 'decode'] as const;
        const active = new Set<number>();
        roles.forEach((role, i) => {
          policy.instanceAdded(i, { kvCapacityTokens: 64, role }, 0);
          active.add(i);
        });
        const base = policy as unknown as { inflight(i: number): number };
        // Without routeDecode, the policy names the decode instance at route (Splitwise's pair).
        const atRoute = policy.routeDecode === undefined;
        const inflight: { id: string; instance: number; decode: number | 'at-kv-ready'; decoded: boolean }[] =
          [];
        let now = 0;
        let n = 0;
        const expectCounts = () => {
          for (let i = 0; i < 4; i++) {
            const want = inflight.filter((r) => r.instance === i).length;
            assert.equal(base.inflight(i), want, `${name}: in flight on ${i}`);
          }
        };
        for (const op of ops) {
          now += 0.25;
          if (op.kind === 'route') {
            const id = `r${n++}`;
            const open = [0, 1].filter((i) => active.has(i));
            const tokens = Uint32Array.from([1, 2, 3, n]);
            const decodes = [2, 3].filter((i) => active.has(i));
            if (open.length === 0 || (atRoute && decodes.length === 0)) {
              assert.throws(() => policy.route({ id, tokens, arrival: now }, now));
              continue;
            }
            const d = policy.route({ id, tokens, arrival: now }, now);
            assert.ok(open.includes(d.instance), `${name} sent a prefill to ${d.instance}`);
            assert.ok(d.decode !== undefined, `${name} returned a colocated decision`);
            if (atRoute) assert.ok(decodes.includes(d.decode as number), `${name} named decode ${d.decode}`);
            else assert.equal(d.decode, 'at-kv-ready');
            assert.ok(policy.branches.includes(d.branch));
            inflight.push({ id, instance: d.instance, decode: d.decode, decoded: false });
            policy.requestStarted(id, now);
            policy.requestFirstToken(id, now);
          } else if (op.kind === 'kv-ready') {
            const waiting = inflight.filter((r) => !r.decoded);
            if (waiting.length === 0) continue;
            const r = waiting[op.pick % waiting.length]!;
            const avoid = op.avoid === undefined ? [] : [op.avoid];
            const open = [2, 3].filter((i) => active.has(i) && !avoid.includes(i));
            const path = Uint32Array.from([1, 2, 3]);
            policy.kvReady?.(r.id, r.instance, path, now);
            if (r.decode !== 'at-kv-ready') {
              r.instance = r.decode;
              r.decoded = true;
              policy.kvArrived?.(r.id, r.decode, path, now);
              expectCounts();
              continue;
            }
            if (open.length === 0) {
              assert.throws(() => policy.routeDecode?.(r.id, r.instance, 3, now, avoid));
              continue;
            }
            const decode = policy.routeDecode!(r.id, r.instance, 3, now, avoid);
            assert.ok(open.includes(decode), `${name} sent a decode to ${decode}`);
            r.instance = decode;
            r.decoded = true;
            policy.kvArrived?.(r.id, decode, path, now);
          } else if (op.kind === 'finish' || op.kind === 'fail') {
            if (inflight.length === 0) continue;
            const [r] = inflight.splice(op.pick % inflight.length, 1);
            if (op.kind === 'finish')
              policy.requestFinished(r!.id, now, { promptTokens: 4, cachedTokens: 0, outputTokens: 2 });
            else policy.requestFailed(r!.id, now);
          } else if (op.kind === 'drain') {
            policy.instanceDrained(op.instance, now);
            active.delete(op.instance);
          } else if (op.kind === 'add') {
            policy.instanceAdded(op.instance, { kvCapacityTokens: 64, role: roles[op.instance]! }, now);
            active.add(op.instance);
          }
          expectCounts();
        }
        const ended = inflight.splice(0);
        for (const r of ended) policy.requestFailed(r.id, now);
        for (const r of ended) policy.requestFailed(r.id, now); // a repeated report changes nothing
        expectCounts();
      }),
      { numRuns: 60 },
    );
  });
}

test('a disaggregated policy refuses a fleet without prefill and decode instances with one line', () => {
  // prefix-pd is its inner colocated policy on such a fleet (prefix-aware.test.ts); aladdin places colocated there.
  for (const name of disaggregatedPolicyNames.filter((n) => n !== 'prefix-pd' && n !== 'aladdin')) {
    const policy = createGlobalPolicy(name, { costModel: simpleCostModel() });
    policy.instanceAdded(0, { kvCapacityTokens: 64 }, 0);
    assert.throws(
      () => policy.route({ id: 'a', tokens: Uint32Array.of(1), arrival: 0 }, 0),
      /no prefill and decode instances/,
    );
  }
});
