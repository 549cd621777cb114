import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { ReplicaLauncher } from '../../src/gateway/advice/actor.ts';
import type { Advice } from '../../src/gateway/advice/advisor.ts';
import { adviceSchema } from '../../src/gateway/advice/config.ts';
import { complete, type Engine, MODEL, setFaults, startEngine, startGateway } from './helpers.ts';

const engines: Engine[] = [];
after(async () => {
  await Promise.all(engines.map((e) => e.server.close().catch(() => {})));
});

/** A test double where the llama.cpp launcher goes: emulated engines, stopped by the gateway. */
function fakeLauncher() {
  const log: string[] = [];
  const launcher: ReplicaLauncher = {
    dialect: 'preble',
    roles: ['mixed'],
    async start(role) {
      const engine = await startEngine();
      engines.push(engine);
      log.push(`start ${role} ${engine.url}`);
      return {
        url: engine.url,
        stop: async () => {
          log.push(`stop ${engine.url}`);
          await engine.server.close();
        },
      };
    },
  };
  return { launcher, log };
}

/** A gateway acting with `launcher` within the bounds, every capacity 1 req/s. */
function actingGateway(
  launcher: ReplicaLauncher,
  bounds: { min: number; max: number },
  replicas: string[] = [],
  drainSeconds = 30,
) {
  return startGateway(replicas, {
    model: MODEL,
    drainSeconds,
    launcher,
    advice: {
      config: adviceSchema.parse({ slo: { ttft: 1, tpot: 0.1 }, act: true, ...bounds }),
      costModel: MODEL,
      evaluate: async (tasks) => tasks.map(() => ({ rps: 1, bracketed: true, probes: [] })),
    },
  });
}

const advice = (mixed: number) => ({ total: { mixed } }) as unknown as Advice;

test('acting starts and drains-then-stops only the replicas the gateway started, after two intervals', async () => {
  const foreign = await startEngine();
  engines.push(foreign);
  const { launcher, log } = fakeLauncher();
  const { gateway, url } = await actingGateway(launcher, { min: 1, max: 3 }, [foreign.url]);
  const actor = gateway.actor!;
  try {
    await actor.adopt('mixed', await launcher.start('mixed'));
    assert.equal(gateway.replicas.present().length, 2);
    // Five recommended: the first interval only notes the difference.
    const first = await actor.act(advice(5));
    assert.equal(first.started, 0);
    assert.match(first.note, /waiting one more interval/);
    // The second starts up to max (3 owned), whatever the advice asks beyond it.
    const second = await actor.act(advice(5));
    assert.equal(second.started, 2);
    assert.equal(actor.ownedReplicas.length, 3);
    assert.equal(gateway.replicas.present().length, 4);
    assert.equal((await complete(url)).status, 200);
    // One recommended: down to min (1 owned) after two intervals; the foreign replica stays.
    assert.equal((await actor.act(advice(1))).stopped, 0);
    assert.equal((await actor.act(advice(1))).stopped, 2);
    const present = gateway.replicas.present().map((r) => r.url);
    assert.equal(present.length, 2);
    assert.ok(present.includes(new URL(foreign.url).origin));
    assert.equal(log.filter((l) => l.startsWith('stop')).length, 2);
    // A difference that does not last two intervals changes nothing.
    await actor.act(advice(3));
    assert.match((await actor.act(advice(1))).note, /fleet matches the advice/);
    assert.equal(actor.ownedReplicas.length, 1);
  } finally {
    await gateway.close();
  }
  // Closing the gateway stops what it started, and only that.
  assert.equal(log.filter((l) => l.startsWith('stop')).length, 3);
  assert.equal((await fetch(`${foreign.url}/health`)).status, 200);
});

test('no traffic scales down to min, an advice without a count changes nothing, a failed start is one line', async () => {
  const { launcher, log } = fakeLauncher();
  let fail = false;
  const failing: ReplicaLauncher = {
    ...launcher,
    start: (role) =>
      fail
        ? Promise.reject(
            new Error('llama-server exited with code 1 before it was ready; its last output:\nbad magic'),
          )
        : launcher.start(role),
  };
  const { gateway } = await actingGateway(failing, { min: 1, max: 3 });
  const actor = gateway.actor!;
  const unknown = { total: { mixed: undefined } } as unknown as Advice;
  try {
    await actor.adopt('mixed', await failing.start('mixed'));
    await actor.act(advice(2));
    assert.equal((await actor.act(advice(2))).started, 1);
    // An empty window (the advisor's total 0) goes down to min, after two intervals as any change.
    await actor.act(advice(0));
    // An advice without a count in between starts the streak over.
    assert.match((await actor.act(unknown)).note, /gives no replica count, nothing changed/);
    assert.equal((await actor.act(advice(0))).stopped, 0);
    assert.equal((await actor.act(advice(0))).stopped, 1);
    assert.equal(actor.ownedReplicas.length, 1);
    // A start that fails is a one-line note (the next intervals try again), not a thrown error.
    fail = true;
    await actor.act(advice(2));
    const failed = await actor.act(advice(2));
    assert.equal(failed.started, 0);
    assert.equal(
      failed.note,
      'mixed: could not start a replica (0 started): llama-server exited with code 1 before it was ready; its last output:',
    );
    assert.equal(actor.ownedReplicas.length, 1);
  } finally {
    await gateway.close();
  }
  assert.equal(log.filter((l) => l.startsWith('start')).length, 2);
  assert.equal(log.filter((l) => l.startsWith('stop')).length, 2);
});

test('once the gateway begins closing, a start under way is stopped, not adopted, and no other starts', async () => {
  const { launcher, log } = fakeLauncher();
  let closed: Promise<void> | undefined;
  // The second start ends after the gateway's close began (called from within it, so the order
  // does not depend on how long anything takes); a third is never asked for.
  let calls = 0;
  const closingMidway: ReplicaLauncher = {
    ...launcher,
    async start(role) {
      const started = await launcher.start(role);
      if (++calls === 2) closed = gateway.close();
      return started;
    },
  };
  const { gateway } = await actingGateway(closingMidway, { min: 0, max: 3 });
  const actor = gateway.actor!;
  await actor.act(advice(3));
  const record = await actor.act(advice(3));
  assert.equal(record.started, 1);
  assert.equal(record.note, 'mixed: 0 -> 1 owned replicas, not 3: the gateway is closing');
  assert.equal(calls, 2);
  assert.equal((await actor.act(advice(3))).note, 'the gateway is closing');
  await closed;
  assert.equal(actor.ownedReplicas.length, 0);
  // The second replica is stopped as the act refuses it, the first as the gateway closes.
  assert.deepEqual(
    log.map((l) => l.split(' ')[0]),
    ['start', 'start', 'stop', 'stop'],
  );
});

test('a replica draining when the gateway begins closing finishes its requests and is stopped once', async () => {
  const { launcher, log } = fakeLauncher();
  // A short --drain: the test's client keeps its connection open, which the close waits for up to it.
  const { gateway, url } = await actingGateway(launcher, { min: 0, max: 2 }, [], 1);
  const actor = gateway.actor!;
  const replica = await actor.adopt('mixed', await launcher.start('mixed'));
  await setFaults(replica.url, { firstByteDelay: 0.5 });
  const request = complete(url);
  while (replica.inflight === 0) await new Promise((resolve) => setImmediate(resolve));
  await actor.act(advice(0));
  const acting = actor.act(advice(0)); // drains the replica, its request still under way
  const closed = gateway.close();
  assert.equal((await request).status, 200);
  // The act leaves it to the close (no remove on the pools the close destroys, no rejection).
  const record = await acting;
  assert.equal(record.stopped, 0);
  assert.equal(record.note, 'mixed: 1 -> 1 owned replicas, not 0: the gateway is closing');
  await closed;
  assert.equal(actor.ownedReplicas.length, 0);
  assert.deepEqual(
    log.map((l) => l.split(' ')[0]),
    ['start', 'stop'],
  );
});
