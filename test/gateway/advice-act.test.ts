import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { ReplicaLauncher } from '../../src/gateway/advice/actor.ts';
import type { Advice } from '../../src/gateway/advice/advisor.ts';
import { adviceSchema } from '../../src/gateway/advice/config.ts';
import { complete, type Engine, MODEL, startEngine, startGateway } from './helpers.ts';

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
) {
  return startGateway(replicas, {
    model: MODEL,
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

test('a replica whose start finishes after the gateway began closing is stopped, not adopted', async () => {
  const { launcher, log } = fakeLauncher();
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const slow: ReplicaLauncher = {
    ...launcher,
    async start(role) {
      await gate;
      return launcher.start(role);
    },
  };
  const { gateway } = await actingGateway(slow, { min: 0, max: 2 });
  const actor = gateway.actor!;
  await actor.act(advice(1));
  const acting = actor.act(advice(1)); // waits in the launcher
  const closed = gateway.close();
  release();
  assert.equal((await acting).started, 0);
  await closed;
  assert.equal(actor.ownedReplicas.length, 0);
  assert.deepEqual(
    log.map((l) => l.split(' ')[0]),
    ['start', 'stop'],
  );
});
