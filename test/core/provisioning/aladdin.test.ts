import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AladdinProvisioner } from '../../../src/core/provisioning/aladdin.ts';
import { createProvisioner, parseProvisioner } from '../../../src/core/provisioning/registry.ts';
import { fitWorkerLine, lowRateGuard, workersForRate } from '../../../src/core/provisioning/sizing.ts';
import type { FleetState, ProvisionedInstance } from '../../../src/core/provisioning/types.ts';

test('Eq. 7 by hand: ceil(k5 x rate + c5), at least one worker', () => {
  assert.equal(workersForRate({ k5: 0.25, c5: 0.5 }, 10), 3); // 2.5 + 0.5 = 3 exactly
  assert.equal(workersForRate({ k5: 0.25, c5: 0.5 }, 11), 4); // 3.25
  assert.equal(workersForRate({ k5: 0.25, c5: -2 }, 1), 1);
});

test('the worker line is fitted from (rate, workers) pairs; one rate gives the proportional line', () => {
  const line = fitWorkerLine([
    { rate: 4, workers: 2 },
    { rate: 8, workers: 3 },
    { rate: 12, workers: 4 },
  ])!;
  assert.ok(Math.abs(line.k5 - 0.25) < 1e-9 && Math.abs(line.c5 - 1) < 1e-9);
  assert.deepEqual(fitWorkerLine([{ rate: 5, workers: 2 }]), { k5: 0.4, c5: 0 });
  assert.equal(fitWorkerLine([]), undefined);
});

test('the low-rate guard: n >= (sigma / (share x mean))^2 arrivals per heartbeat', () => {
  // σ/μ = 1, 10% error: 100 arrivals, over a 10 s heartbeat 10 requests/s.
  assert.ok(Math.abs(lowRateGuard(200, 200, 0.1, 10) - 10) < 1e-9);
});

const active = (id: number, inflight: number): ProvisionedInstance => ({
  id,
  role: 'mixed',
  state: 'active',
  inflight,
});
const state = (instances: ProvisionedInstance[], arrivals: number, wanted?: number): FleetState => ({
  instances,
  arrivals,
  elapsed: 10,
  ...(wanted === undefined ? {} : { wanted }),
});

test('a given line: rising rate adds workers, falling rate removes the emptiest, newest first on ties', () => {
  const p = new AladdinProvisioner({ heartbeatSeconds: 10, k5: 0.25, c5: 0, minRate: 1 });
  // 12 requests/s -> 3 workers; 1 of them.
  assert.deepEqual(p.tick(10, state([active(0, 5)], 120)), [
    { action: 'add', role: 'mixed' },
    { action: 'add', role: 'mixed' },
  ]);
  // 4 requests/s -> 1 worker of 3: the two with least in flight go (ties: the newest).
  assert.deepEqual(p.tick(20, state([active(0, 3), active(1, 0), active(2, 0)], 40)), [
    { action: 'remove', instance: 2 },
    { action: 'remove', instance: 1 },
  ]);
  // A starting worker counts: nothing more is added for it.
  const starting: ProvisionedInstance = { id: -1, role: 'mixed', state: 'starting', inflight: 0 };
  assert.deepEqual(p.tick(30, state([active(0, 3), active(1, 1), starting], 120)), []);
});

test('below R the fleet follows the policy, and the heartbeat gathers ticks until it is due', () => {
  const p = new AladdinProvisioner({ heartbeatSeconds: 20, minRate: 5 });
  assert.deepEqual(p.tick(10, state([active(0, 1)], 10, 3)), []); // 10 s of 20
  // 20 arrivals over 20 s: 1/s, below R: the policy's 3 workers.
  assert.equal(p.tick(20, state([active(0, 1)], 10, 3)).length, 2);
});

test('the line is learned online from the placement: used workers against the rate', () => {
  const p = new AladdinProvisioner({ heartbeatSeconds: 10, minRate: 1 });
  const fleet = [active(0, 4), active(1, 4), active(2, 4), active(3, 4)];
  p.tick(10, state(fleet, 40, 2)); // 4/s: 2 used
  p.tick(20, state(fleet, 80, 4)); // 8/s: 4 used
  const line = p.line()!;
  assert.ok(Math.abs(line.k5 - 0.5) < 1e-9 && Math.abs(line.c5) < 1e-9);
  assert.equal(p.target(12, 0), 6);
});

test('never removes the last active worker while another starts; stays within min and max', () => {
  const p = new AladdinProvisioner({ heartbeatSeconds: 10, k5: 1, c5: 0, maxWorkers: 5 });
  assert.equal(p.tick(10, state([active(0, 1)], 1000)).length, 4);
  const starting: ProvisionedInstance = { id: -1, role: 'mixed', state: 'starting', inflight: 0 };
  const r = new AladdinProvisioner({ heartbeatSeconds: 10, k5: 0.01, c5: 0 });
  assert.deepEqual(r.tick(10, state([active(0, 0), starting], 100)), []);
  const q = new AladdinProvisioner({ heartbeatSeconds: 10, k5: 0.01, c5: 0, minWorkers: 2 });
  assert.deepEqual(q.tick(10, state([active(0, 0), active(1, 0), active(2, 0)], 100)), [
    { action: 'remove', instance: 2 },
  ]);
});

test('--provisioner parses typed options and refuses bad ones with one line', () => {
  assert.deepEqual(parseProvisioner('aladdin'), { name: 'aladdin', options: {} });
  const c = parseProvisioner('aladdin:heartbeatSeconds=5,role=decode');
  assert.deepEqual(c.options, { heartbeatSeconds: 5, role: 'decode' });
  assert.equal(createProvisioner(c).name, 'aladdin');
  assert.throws(() => parseProvisioner('nope'), /unknown provisioner 'nope'; valid: aladdin/);
  assert.throws(() => parseProvisioner('aladdin:speed=3'), /unknown aladdin provisioner option 'speed'/);
  assert.throws(() => parseProvisioner('aladdin:minRate=x'), /must be a number/);
  assert.throws(
    () => createProvisioner(parseProvisioner('aladdin:role=prefill')),
    /role must be mixed or decode/,
  );
});
