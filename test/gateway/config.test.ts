import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseGatewayConfig, readConfigFile, resolveSecret } from '../../src/gateway/config.ts';

test('a minimal config gets every default, bare URLs become preble replicas', () => {
  const c = parseGatewayConfig({ port: 8080, replicas: ['http://127.0.0.1:9000'] });
  assert.equal(c.policy, 'e2');
  assert.equal(c.limits.maxQueue, 1024);
  assert.equal(c.timeouts.firstTokenSeconds, 120);
  assert.equal(c.retries.attempts, 2);
  assert.equal(c.breaker.failureThreshold, 3);
  assert.deepEqual(c.replicas, [{ url: 'http://127.0.0.1:9000', dialect: 'preble', role: 'mixed' }]);
  assert.equal(c.logBodies, false);
  assert.deepEqual(c.policyOptions, {});
  const tuned = parseGatewayConfig({
    port: 1,
    policy: 'e2',
    policyOptions: { phaseMix: false, windowSeconds: 60 },
  });
  assert.deepEqual(tuned.policyOptions, { phaseMix: false, windowSeconds: 60 });
});

test('config errors are one line naming the field', () => {
  const cases: [unknown, RegExp][] = [
    [{}, /^f: port: /],
    [{ port: 1, replicas: ['ftp://x'] }, /^f: replicas\.0\.url: must be an http\(s\) URL$/],
    [{ port: 1, replicas: [{ url: 'http://a', dialect: 'tgi' }] }, /^f: replicas\.0\.dialect: /],
    [
      { port: 1, replicas: [{ url: 'http://a', kvEvents: 'http://a:5557' }] },
      /^f: replicas\.0\.kvEvents: must be a ZMQ endpoint such as tcp:\/\/host:port$/,
    ],
    [
      { port: 1, replicas: [{ url: 'http://a', costModel: 'h100' }] },
      /^f: replicas\.0\.costModel: unknown cost-model preset \(e\.g\. mistral-7b-a6000, /,
    ],
    [{ port: 1, costModel: 'a100' }, /^f: costModel: unknown cost-model preset/],
    [{ port: 1, limits: { maxQueue: -1 } }, /^f: limits\.maxQueue: /],
    [{ port: 1, limtis: {} }, /^f: \(top level\): .*limtis/],
    [{ port: 1, auth: { adminKey: 'short' } }, /^f: auth\.adminKey: must be at least 16 characters$/],
    [{ port: 1, auth: { keys: [{ name: 'a' }] } }, /^f: auth\.keys\.0: give exactly one of key, keyEnv$/],
    [{ port: 1, policy: 'nope' }, /^f: policy: unknown policy 'nope'; valid policies: e2, /],
    [
      { port: 1, policyOptions: { autoscale: false } },
      /^f: policyOptions\.autoscale: e2 option 'autoscale' was renamed 'prefixReplication'$/,
    ],
    [
      { port: 1, policyOptions: { windowSeconds: 'long' } },
      /^f: policyOptions\.windowSeconds: .*must be a number/,
    ],
    [
      { port: 1, policy: 'round-robin', policyOptions: { seed: 1 } },
      /^f: policyOptions\.seed: unknown round-robin option 'seed'; round-robin has no options$/,
    ],
  ];
  for (const [raw, pattern] of cases) {
    assert.throws(
      () => parseGatewayConfig(raw, 'f'),
      (e: Error) => pattern.test(e.message) && !e.message.includes('\n'),
      JSON.stringify(raw),
    );
  }
});

test('YAML files are read with one-line errors; secrets come from the environment', () => {
  const dir = mkdtempSync(join(tmpdir(), 'preble-config-'));
  const good = join(dir, 'good.yaml');
  writeFileSync(
    good,
    'port: 8080\nreplicas:\n  - url: http://127.0.0.1:9000\n    dialect: llamacpp\nlimits:\n  maxConcurrent: 4\n',
  );
  const c = parseGatewayConfig(readConfigFile(good), good);
  assert.equal(c.replicas[0]!.dialect, 'llamacpp');
  assert.equal(c.limits.maxConcurrent, 4);
  const bad = join(dir, 'bad.yaml');
  writeFileSync(bad, 'port: [1\n');
  assert.throws(() => readConfigFile(bad), /bad\.yaml: not valid YAML: /);
  assert.throws(
    () => readConfigFile(join(dir, 'missing.yaml')),
    /cannot read config .*missing\.yaml: ENOENT/,
  );
  assert.equal(resolveSecret(undefined, 'K', 'auth.adminKeyEnv', { K: 'x'.repeat(16) }), 'x'.repeat(16));
  assert.throws(
    () => resolveSecret(undefined, 'K', 'auth.adminKeyEnv', {}),
    /auth\.adminKeyEnv: environment variable K is unset/,
  );
});

test("a replica's kvEvents endpoint is kept", () => {
  const c = parseGatewayConfig({
    port: 1,
    replicas: [{ url: 'http://127.0.0.1:9000', dialect: 'vllm', kvEvents: 'tcp://127.0.0.1:5557' }],
  });
  assert.equal(c.replicas[0]!.kvEvents, 'tcp://127.0.0.1:5557');
});

test("a replica's cost-model preset is kept (a fleet of mixed GPUs)", () => {
  const c = parseGatewayConfig({
    port: 1,
    replicas: [{ url: 'http://a', costModel: 'llama2-7b-h100' }, 'http://b'],
  });
  assert.equal(c.replicas[0]!.costModel, 'llama2-7b-h100');
  assert.equal(c.replicas[1]!.costModel, undefined);
});
