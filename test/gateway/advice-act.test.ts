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

const advice = (mixed: number) => ({ total: { mixed } }) as unknown as Advice;

test('acting starts and drains-then-stops only the replicas the gateway started, after two intervals', async () => {
  const foreign = await startEngine();
  engines.push(foreign);
  const { launcher, log } = fakeLauncher();
  const { gateway, url } = await startGateway([foreign.url], {
    model: MODEL,
    launcher,
    advice: {
      config: adviceSchema.parse({ slo: { ttft: 1, tpot: 0.1 }, act: true, min: 1, max: 3 }),
      costModel: MODEL,
      evaluate: async (tasks) => tasks.map(() => ({ rps: 1, bracketed: true, probes: [] })),
    },
  });
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
