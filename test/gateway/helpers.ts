import { costModelPreset } from '../../src/core/cost-model/presets.ts';
import { createGlobalPolicy } from '../../src/core/policies/registry.ts';
import type { FaultSettings } from '../../src/emulator/faults.ts';
import { createEngineServer, type EngineServer } from '../../src/emulator/server.ts';
import {
  createGateway,
  type Gateway,
  type GatewayOptions,
  type ReplicaSpec,
} from '../../src/gateway/server.ts';

export const MODEL = 'mistral-7b-a6000';

export interface Engine {
  readonly server: EngineServer;
  readonly url: string;
}

/** An emulated replica on a free port (fast clock), optionally misbehaving. */
export async function startEngine(faults: Partial<FaultSettings> = {}, timeScale = 1000): Promise<Engine> {
  const server = createEngineServer({ timeScale, faults, faultAdmin: true });
  const { url } = await server.listen(0, '127.0.0.1');
  return { server, url };
}

/** A gateway on a free port with quiet logs, health checks only when the test runs them. */
export async function startGateway(
  replicas: readonly (string | ReplicaSpec)[],
  options: Partial<GatewayOptions> = {},
  policy = 'round-robin',
): Promise<{ gateway: Gateway; url: string; policyInflight: () => number }> {
  const costModel = costModelPreset(MODEL);
  const gateway = createGateway({
    createPolicy: () => createGlobalPolicy(policy, { costModel }),
    replicas,
    replicaKvTokens: costModel.kvCapacityTokens,
    pollSeconds: 0,
    logLevel: 'silent',
    health: { intervalSeconds: 0 },
    ...options,
  });
  const url = await gateway.listen(0, '127.0.0.1');
  // Every policy counts in flight through its ClusterView (BasePolicy); one policy per model pool.
  const policyInflight = () =>
    gateway.replicas
      .pools()
      .reduce(
        (sum, p) => sum + (p.policy as unknown as { view: { inflightTotal: number } }).view.inflightTotal,
        0,
      );
  return { gateway, url, policyInflight };
}

export async function complete(
  url: string,
  body: Record<string, unknown> = {},
  headers: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<{ status: number; json: Record<string, unknown>; headers: Headers }> {
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: MODEL, prompt: 'hello there', max_tokens: 3, ...body }),
    ...(signal === undefined ? {} : { signal }),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown>, headers: res.headers };
}

/** Sum of one metric over its label sets in the gateway's registry. */
export async function gatewayMetric(
  gateway: Gateway,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const metric = await gateway.metrics.registry.getSingleMetric(name)?.get();
  let sum = 0;
  for (const v of metric?.values ?? [])
    if (Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want)) sum += v.value;
  return sum;
}

/** Change a `preble engine --fault-admin` replica's injected faults; answers how many requests it holds. */
export async function setFaults(url: string, patch: Partial<FaultSettings>): Promise<{ active: number }> {
  const res = await fetch(`${url}/_preble/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(patch),
  });
  return (await res.json()) as { active: number };
}
