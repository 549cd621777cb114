import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { costModelPreset } from '../../src/core/cost-model/presets.ts';
import type { KvLink, TransferMode } from '../../src/core/fleet/kv-link.ts';
import {
  createGlobalPolicy,
  disaggregatedPolicyNames,
  globalPolicyNames,
} from '../../src/core/policies/registry.ts';
import type { Role } from '../../src/core/types.ts';
import { type FleetAction, type SimInstance, simulate } from '../../src/sim/simulator.ts';
import { createWorkload } from '../../src/workloads/registry.ts';
import { RecordingPolicy } from '../helpers/recording-policy.ts';
import { simpleCostModel } from '../helpers/simple-cost-model.ts';

// Exactly-once release and memory conservation with fleet actions interleaved: instances added,
// drained, removed and changing role while requests run (docs/fleets.md, "Fleet actions").

const costModel = costModelPreset('mistral-7b-a6000', { kvCapacityTokens: 12_000 });
const link: KvLink = { class: 'infiniband-200', bandwidth: 25e9, latency: 10e-6 };
const placement = { nodeOf: (i: number) => i, nodeLink: link, network: link };

/** A scripted action before it is checked against the fleet: `target` picks an instance. */
interface Step {
  readonly at: number;
  readonly kind: 'add' | 'drain' | 'remove' | 'role';
  readonly target: number;
  readonly role: Role;
}

const stepArb: fc.Arbitrary<Step> = fc.record({
  at: fc.integer({ min: 0, max: 400 }).map((cs) => cs / 100),
  kind: fc.constantFrom('add' as const, 'drain' as const, 'remove' as const, 'role' as const),
  target: fc.nat(20),
  role: fc.constantFrom<Role>('mixed', 'prefill', 'decode'),
});

/**
 * The steps as actions the fleet can take, in time order: ids of instances that exist and were not
 * removed, never one of `keep` (so every pool keeps an active instance and routing never fails), and,
 * on a colocated fleet, mixed roles only.
 */
function script(
  steps: readonly Step[],
  initial: number,
  keep: readonly number[],
  colocated: boolean,
): FleetAction[] {
  const actions: FleetAction[] = [];
  let count = initial;
  const removed = new Set<number>();
  for (const s of [...steps].sort((a, b) => a.at - b.at)) {
    const role: Role = colocated ? 'mixed' : s.role;
    if (s.kind === 'add') {
      actions.push({ at: s.at, action: 'add', spec: { costModel, role, layers: 32 } });
      count++;
      continue;
    }
    const instance = s.target % count;
    if (keep.includes(instance) || removed.has(instance)) continue;
    if (s.kind === 'role') {
      if (colocated) continue;
      actions.push({ at: s.at, action: 'role', instance, role });
    } else actions.push({ at: s.at, action: s.kind, instance });
    if (s.kind === 'remove') removed.add(instance);
  }
  return actions;
}

function check(
  policyName: string,
  roles: readonly Role[],
  actions: FleetAction[],
  mode: TransferMode,
  seed: number,
  rps = 12,
) {
  const inner = createGlobalPolicy(policyName, { costModel: simpleCostModel(), seed: 3 });
  const policy = new RecordingPolicy(inner);
  const fleet: SimInstance[] = roles.map((role) => ({ costModel, role, layers: 32 }));
  const colocated = roles.every((r) => r === 'mixed');
  const result = simulate({
    policy,
    instances: fleet.length,
    costModel,
    fleet,
    engine: { queuePolicy: colocated ? 'lpm' : 'fcfs' },
    ...(colocated ? {} : { kvTransfer: { placement, mode } }),
    fleetActions: actions,
    requests: createWorkload('toolbench', { requests: 50, rps, seed }),
    onIteration: (_i, _it, engine) => engine.checkInvariants(),
  });
  // Every request released exactly once, none lost on a drained or removed instance.
  const ends = new Map<string, number>();
  const removedAt = new Map<number, number>();
  for (const c of policy.calls) {
    if (c.method === 'requestFinished' || c.method === 'requestFailed')
      ends.set(c.id, (ends.get(c.id) ?? 0) + 1);
    if (c.method === 'instanceRemoved') removedAt.set(c.instance, c.now);
    // Nothing routed to an instance after it left.
    if (c.method === 'route') {
      const gone = removedAt.get(c.decision.instance);
      assert.ok(gone === undefined, `${c.id} routed to removed instance ${c.decision.instance}`);
    }
  }
  assert.equal(result.records.length, 50);
  for (const r of result.records) {
    assert.equal(ends.get(r.id), 1, `${policyName}: ${r.id} released once`);
    assert.ok(r.finish >= 0, `${r.id} finished`);
  }
  const base = inner as unknown as { inflight(i: number): number };
  for (let i = 0; i < result.engines.length; i++) assert.equal(base.inflight(i), 0, `in flight on ${i}`);
  // Memory conserved: every engine ends empty (no pinned, private, reserved or held KV).
  for (const [i, s] of result.engines.entries()) {
    assert.deepEqual(
      [s.running, s.waiting, s.adoptWaiting, s.heldRequests, s.usedKvTokens],
      [0, 0, 0, 0, 0],
      `${i}`,
    );
  }
  // A removal comes after its drain and the instance's cache was reported evicted before it.
  for (const e of result.fleetLog.filter((f) => f.event === 'removed')) {
    const drained = result.fleetLog.find((f) => f.instance === e.instance && f.event === 'drained');
    assert.ok(drained !== undefined && drained.at <= e.at);
    assert.equal(result.engines[e.instance]!.usedKvTokens, 0);
  }
  return result;
}

for (const name of globalPolicyNames) {
  test(`${name} with instances added, drained and removed mid-run: every request released once, memory conserved`, () => {
    fc.assert(
      fc.property(fc.array(stepArb, { maxLength: 8 }), fc.nat(1000), (steps, seed) => {
        const roles: Role[] = ['mixed', 'mixed', 'mixed'];
        check(name, roles, script(steps, roles.length, [0], true), 'serialized', seed);
      }),
      { numRuns: 8 },
    );
  });
}

for (const name of disaggregatedPolicyNames) {
  test(`${name} with instances added, drained, removed and changing role mid-run: every request released once, memory conserved`, () => {
    fc.assert(
      fc.property(
        fc.array(stepArb, { maxLength: 10 }),
        fc.nat(1000),
        fc.constantFrom<TransferMode>('serialized', 'layer-wise', 'pull'),
        (steps, seed, mode) => {
          const roles: Role[] = ['prefill', 'prefill', 'decode', 'decode'];
          check(name, roles, script(steps, roles.length, [0, 2], false), mode, seed);
        },
      ),
      { numRuns: 20 },
    );
  });
}

test('a role change waits for the engine: a decode instance turned prefill finishes its decodes as mixed, then settles', () => {
  const roles: Role[] = ['prefill', 'decode', 'decode'];
  const actions: FleetAction[] = [{ at: 1.5, action: 'role', instance: 2, role: 'prefill' }];
  const result = check('distserve', roles, actions, 'serialized', 1, 40);
  const log = result.fleetLog.map((e) => [e.instance, e.event, e.role]);
  assert.deepEqual(log[0], [2, 'role', 'prefill']);
  const settled = result.fleetLog.find((e) => e.event === 'role-settled');
  assert.ok(settled !== undefined && settled.instance === 2 && settled.at > 1.5, 'it waited');
});

test('fleet actions on ids that are not there fail with one line', () => {
  const run = (action: FleetAction) =>
    simulate({
      policy: createGlobalPolicy('round-robin', { costModel }),
      instances: 2,
      costModel,
      fleetActions: [action],
      requests: createWorkload('toolbench', { requests: 5, rps: 5, seed: 1 }),
    });
  assert.throws(
    () => run({ at: 0.1, action: 'drain', instance: 7 }),
    /fleet drain of instance 7: no such instance/,
  );
  assert.throws(
    () => run({ at: 0.1, action: 'role', instance: 1, role: 'prefill' }),
    /places requests colocated/,
  );
});

test('the scripts reach adds, drains, removals, role changes that wait, and splitwise borrowing', () => {
  const seen = new Map<string, number>();
  fc.assert(
    fc.property(fc.array(stepArb, { maxLength: 10 }), fc.nat(1000), (steps, seed) => {
      const roles: Role[] = ['prefill', 'prefill', 'decode', 'decode'];
      for (const name of disaggregatedPolicyNames) {
        const result = check(name, roles, script(steps, roles.length, [0, 2], false), 'pull', seed, 30);
        // A role change that waited: settled later than it was told.
        const waits = result.fleetLog.filter(
          (e, k) =>
            e.event === 'role-settled' &&
            result.fleetLog.slice(0, k).findLast((f) => f.instance === e.instance && f.event === 'role')!.at <
              e.at,
        ).length;
        seen.set('waited', (seen.get('waited') ?? 0) + waits);
        for (const e of result.fleetLog)
          seen.set(`${e.event}/${e.by}`, (seen.get(`${e.event}/${e.by}`) ?? 0) + 1);
      }
    }),
    { numRuns: 20, seed: 42 },
  );
  for (const key of [
    'added/action',
    'draining/action',
    'drained/action',
    'removed/action',
    'role/action',
    'waited',
  ])
    assert.ok((seen.get(key) ?? 0) > 0, `${key}: ${JSON.stringify([...seen])}`);
});
