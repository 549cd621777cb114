import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { costModelPreset } from '../../src/core/cost-model/presets.ts';
import { createGateway, type Gateway } from '../../src/gateway/server.ts';
import { InfoSpy } from '../helpers/info-spy.ts';
import { MODEL } from './helpers.ts';

// A fleet of mixed GPUs behind the live gateway: a replica's `costModel` preset reaches the policy
// (InstanceInfo.costModel, which e2-plus prices it with) with that preset's KV capacity.

const gateways: Gateway[] = [];
after(async () => {
  for (const g of gateways) await g.close();
});

test("a replica's cost-model preset reaches the policy, with its KV; the admin API takes and lists it", async () => {
  const adminKey = 'admin-key-0123456789';
  const policies: InfoSpy[] = [];
  const gateway = createGateway({
    createPolicy: () => {
      const p = new InfoSpy();
      policies.push(p);
      return p;
    },
    // Nothing listens there: the replicas' model is configured and health checks are off, so they join
    // the view without being asked anything.
    replicas: ['http://127.0.0.1:9', { url: 'http://127.0.0.1:10', costModel: 'llama2-7b-h100' }],
    model: MODEL,
    replicaKvTokens: 50_000,
    pollSeconds: 0,
    logLevel: 'silent',
    health: { intervalSeconds: 0 },
    auth: { adminKey },
  });
  gateways.push(gateway);
  const url = await gateway.listen(0, '127.0.0.1');
  const infos = policies[0]!.infos;
  assert.equal(infos.get(0)!.costModel, undefined, "the gateway's own model");
  assert.equal(infos.get(0)!.kvCapacityTokens, 50_000);
  assert.equal(infos.get(1)!.costModel?.name, 'llama2-7b-h100');
  assert.equal(infos.get(1)!.kvCapacityTokens, costModelPreset('llama2-7b-h100').kvCapacityTokens);

  const headers = { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' };
  const added = await fetch(`${url}/admin/replicas`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      url: 'http://127.0.0.1:11',
      costModel: 'roofline:llama3-8b@h100',
      kvTokens: 70_000,
    }),
  });
  assert.equal(added.status, 201, await added.clone().text());
  assert.equal(((await added.json()) as Record<string, unknown>)['costModel'], 'roofline:llama3-8b@h100');
  assert.equal(infos.get(2)!.costModel?.name, 'roofline:llama3-8b@h100');
  assert.equal(infos.get(2)!.kvCapacityTokens, 70_000, 'a given kvTokens wins over the preset');

  const bad = await fetch(`${url}/admin/replicas`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ url: 'http://127.0.0.1:12', costModel: 'h100' }),
  });
  assert.equal(bad.status, 400);
  const error = ((await bad.json()) as { error: { message: string; param: string } }).error;
  assert.match(error.message, /unknown cost-model preset/);
  assert.equal(error.param, 'costModel');
});
