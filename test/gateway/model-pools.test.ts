import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import Fastify from 'fastify';
import { createEngineServer } from '../../src/emulator/server.ts';
import { complete, startGateway } from './helpers.ts';

const closers: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const close of closers.reverse()) await close();
});

/** An emulated replica serving `model` (its cost-model preset is also the name it lists). */
async function engineServing(model: string): Promise<string> {
  const engine = createEngineServer({ model, timeScale: 1000 });
  const { url } = await engine.listen(0, '127.0.0.1');
  closers.push(() => engine.close(0));
  return url;
}

const A = 'mistral-7b-a6000';
const B = 'llama2-7b-h100';

test('without a configured model the gateway lists what the replicas serve and routes each model in its own pool', async () => {
  const a0 = await engineServing(A);
  const b0 = await engineServing(B);
  const a1 = await engineServing(A);
  const { gateway, url, policyInflight } = await startGateway([a0, b0, a1], {}, 'round-robin');
  closers.push(() => gateway.close());

  const models = (await (await fetch(`${url}/v1/models`)).json()) as {
    object: string;
    data: { id: string; object: string }[];
  };
  assert.equal(models.object, 'list');
  assert.deepEqual(
    models.data.map((m) => m.id),
    [A, B],
  );
  assert.ok(models.data.every((m) => m.object === 'model'));

  // Two pools, each with its own policy instance.
  const pools = gateway.replicas.pools();
  assert.deepEqual(pools.map((p) => p.model).sort(), [A, B].sort());
  assert.notEqual(pools[0]!.policy, pools[1]!.policy);

  const servedBy = async (model: string) => {
    const r = await complete(url, { model });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json['model'], model);
    return r.headers.get('x-preble-replica');
  };
  const seenA = new Set<string | null>();
  const seenB = new Set<string | null>();
  for (let i = 0; i < 4; i++) {
    seenA.add(await servedBy(A));
    seenB.add(await servedBy(B));
  }
  // Round robin within A's pool alternates between its two replicas; B's pool has one.
  assert.deepEqual([...seenA].sort(), [a0, a1].sort());
  assert.deepEqual([...seenB], [b0]);

  const unknown = await complete(url, { model: 'no-such-model' });
  assert.equal(unknown.status, 404);
  assert.equal((unknown.json['error'] as { code: string }).code, 'model_not_found');
  assert.equal((unknown.json['error'] as { param: string }).param, 'model');

  assert.equal(policyInflight(), 0);
  assert.deepEqual(
    gateway.replicas.all().map((r) => r.inflight),
    [0, 0, 0],
  );
});

test('a replica whose model is not known yet takes no requests until it answers /v1/models', async () => {
  // A replica that first fails its /v1/models (as one still loading weights), then lists `late`.
  const app = Fastify();
  let ready = false;
  let served = 0;
  app.get('/v1/models', async (_request, reply) =>
    ready
      ? { object: 'list', data: [{ id: 'late', object: 'model' }] }
      : reply.code(503).send({ error: { message: 'loading' } }),
  );
  app.post('/v1/completions', async () => {
    served++;
    return {
      id: 'cmpl-late',
      object: 'text_completion',
      created: 0,
      model: 'late',
      choices: [{ index: 0, text: 'x', finish_reason: 'length' }],
      usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
    };
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  closers.push(() => app.close());
  const late = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  const a0 = await engineServing(A);
  const { gateway, url, policyInflight } = await startGateway([a0, late]);
  closers.push(() => gateway.close());

  assert.equal(gateway.replicas.get(1)!.modelPool, undefined, 'unknown while it cannot say');
  assert.equal(gateway.replicas.get(1)!.view, 'gone');
  // Requests for the known model never go to it.
  for (let i = 0; i < 3; i++) {
    const r = await complete(url, { model: A });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('x-preble-replica'), a0);
  }
  // Its model is unknown to the gateway: it asks again, then says 404.
  assert.equal((await complete(url, { model: 'late' })).status, 404);
  assert.equal(served, 0);

  ready = true;
  // A request naming a model no known replica serves makes the gateway ask the unknown ones first.
  const r = await complete(url, { model: 'late' });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  assert.equal(r.headers.get('x-preble-replica'), late);
  assert.equal(served, 1);
  const listed = (await (await fetch(`${url}/v1/models`)).json()) as { data: { id: string }[] };
  assert.deepEqual(
    listed.data.map((m) => m.id),
    [A, 'late'],
  );
  assert.equal(policyInflight(), 0);
});

test('a configured model needs no /v1/models; a replica without a usable list serves any other model', async () => {
  const a0 = await engineServing(A);
  // No /v1/models route at all (404): such a replica takes the models no named pool serves.
  const bare = Fastify();
  bare.post('/v1/completions', async () => ({
    id: 'cmpl-bare',
    object: 'text_completion',
    created: 0,
    model: 'whatever',
    choices: [{ index: 0, text: 'x', finish_reason: 'length' }],
    usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
  }));
  await bare.listen({ port: 0, host: '127.0.0.1' });
  closers.push(() => bare.close());
  const bareUrl = `http://127.0.0.1:${(bare.server.address() as { port: number }).port}`;
  const { gateway, url } = await startGateway([{ url: a0, model: 'configured-a' }, bareUrl]);
  closers.push(() => gateway.close());

  const listed = (await (await fetch(`${url}/v1/models`)).json()) as { data: { id: string }[] };
  assert.deepEqual(
    listed.data.map((m) => m.id),
    ['configured-a'],
  );
  // The configured name routes to its replica, which answers for its own model name (the
  // configuration is the operator's word; the emulated engine then refuses a name it does not serve).
  const configured = await complete(url, { model: 'configured-a' });
  assert.equal(configured.headers.get('x-preble-replica'), a0);
  const other = await complete(url, { model: 'anything-else' });
  assert.equal(other.status, 200);
  assert.equal(other.headers.get('x-preble-replica'), bareUrl);
});
