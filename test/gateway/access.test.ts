import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { startFakeReplica } from './fake-replica.ts';
import { complete, type Engine, startEngine, startGateway } from './helpers.ts';

const ADMIN = 'admin-key-0123456789abcdef';
const ALICE = 'alice-key-0123456789abcdef';
const closers: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const c of closers.reverse()) await c();
});
let shared: Engine | undefined;
async function engine(): Promise<Engine> {
  if (shared === undefined) {
    const e = await startEngine();
    closers.push(() => e.server.close(0));
    shared = e;
  }
  return shared;
}
async function gateway(options: Parameters<typeof startGateway>[1]) {
  const g = await startGateway([(await engine()).url], options);
  closers.push(() => g.gateway.close());
  return g;
}
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
async function admin(url: string, method: string, path: string, key: string, body?: unknown) {
  const res = await fetch(`${url}/admin${path}`, {
    method,
    headers: { ...bearer(key), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe('access', () => {
  it('client keys: missing and wrong keys get 401, a good key passes, a revoked key is refused', async () => {
    const { url } = await gateway({ auth: { keys: [{ name: 'alice', key: ALICE }], adminKey: ADMIN } });
    const missing = await complete(url);
    assert.equal(missing.status, 401);
    assert.equal((missing.json['error'] as { code: string }).code, 'invalid_api_key');
    assert.equal((await complete(url, {}, bearer('wrong-key-0123456789'))).status, 401);
    assert.equal((await complete(url, {}, { authorization: 'Basic abc' })).status, 401);
    assert.equal((await complete(url, {}, bearer(ALICE))).status, 200);
    assert.equal((await admin(url, 'DELETE', '/keys/alice', ADMIN)).status, 200);
    assert.equal((await complete(url, {}, bearer(ALICE))).status, 401);
    // /health and /metrics stay open for probes.
    assert.equal((await fetch(`${url}/health`)).status, 200);
    assert.equal((await fetch(`${url}/metrics`)).status, 200);
  });

  it('the admin API refuses client keys and missing keys, and is absent without an admin key', async () => {
    const { url } = await gateway({ auth: { keys: [{ name: 'alice', key: ALICE }], adminKey: ADMIN } });
    assert.equal((await admin(url, 'GET', '/replicas', ALICE)).status, 403);
    assert.equal((await admin(url, 'GET', '/replicas', 'nope-0123456789abcdef')).status, 401);
    assert.equal((await fetch(`${url}/admin/replicas`)).status, 401);
    const { url: open } = await gateway({});
    assert.equal((await admin(open, 'GET', '/replicas', ADMIN)).status, 404);
  });

  it('admin: keys are added (the key shown once) and rate-limited; replicas are added, drained, resumed and removed', async () => {
    const second = await startEngine();
    closers.push(() => second.server.close(0));
    const { gateway: gw, url } = await gateway({ auth: { adminKey: ADMIN } });
    const added = await admin(url, 'POST', '/keys', ADMIN, { name: 'bob', ratePerSecond: 0.001, burst: 2 });
    assert.equal(added.status, 201);
    const key = added.json['key'] as string;
    assert.ok(key.length >= 16);
    assert.deepEqual((await admin(url, 'GET', '/keys', ADMIN)).json['keys'], [
      { name: 'bob', ratePerSecond: 0.001 },
    ]);
    assert.equal((await complete(url, {}, bearer(key))).status, 200);
    assert.equal((await complete(url, {}, bearer(key))).status, 200);
    const limited = await complete(url, {}, bearer(key));
    assert.equal(limited.status, 429);
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);

    const r = await admin(url, 'POST', '/replicas', ADMIN, { url: second.url });
    assert.equal(r.status, 201);
    assert.equal(r.json['state'], 'active');
    assert.equal((await admin(url, 'POST', '/replicas', ADMIN, { url: second.url })).status, 409);
    assert.equal((await admin(url, 'POST', '/replicas', ADMIN, { url: 'file:///etc/passwd' })).status, 400);
    assert.equal((await admin(url, 'POST', '/replicas/0/drain', ADMIN)).json['state'], 'draining');
    assert.equal(
      gw.replicas
        .routable()
        .map((x) => x.url)
        .join(),
      second.url,
    );
    assert.equal((await admin(url, 'POST', '/replicas/0/resume', ADMIN)).json['state'], 'active');
    assert.equal((await admin(url, 'DELETE', '/replicas/1', ADMIN)).json['state'], 'removed');
    assert.equal((await admin(url, 'POST', '/replicas/1/drain', ADMIN)).status, 404);
    assert.equal((await admin(url, 'POST', '/replicas/x/drain', ADMIN)).status, 404);
    const list = (await admin(url, 'GET', '/replicas', ADMIN)).json['replicas'] as { state: string }[];
    assert.deepEqual(
      list.map((x) => x.state),
      ['active', 'removed'],
    );
  });

  it('no replica URL ever comes from a client: an upstream-looking field is passed on, never followed', async () => {
    // A server the client would like the gateway to call: it must never see a request.
    const evil = await startFakeReplica('evil');
    closers.push(() => evil.app.close());
    const evilHost = new URL(evil.url).host;
    const { url } = await gateway({});
    const r = await complete(
      url,
      { base_url: evil.url, url: `${evil.url}/v1/completions`, api_base: evil.url },
      { host: evilHost, 'x-forwarded-host': evilHost, 'x-forwarded-proto': 'http' },
    );
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('x-preble-replica'), (await engine()).url);
    assert.deepEqual(evil.served, [], 'the gateway never called the URL the client named');
  });
});
