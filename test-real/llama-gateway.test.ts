/**
 * Integration: real llama-server replicas (built from source once, cached) behind the gateway.
 * Run by `npm run test:real` (CI's .ci/run), not by `npm test`, which stays hermetic and fast.
 * Assertions are on token counts the replicas report and on how requests end, never on time.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { Pool } from 'undici';
import { costModelPreset } from '../src/core/cost-model/presets.ts';
import { createGlobalPolicy } from '../src/core/policies/registry.ts';
import { sharedPrefixRequests } from '../src/demo/shared-prefix.ts';
import { metricValues } from '../src/gateway/prometheus-text.ts';
import { createGateway, type Gateway, type GatewayOptions } from '../src/gateway/server.ts';
import { ensureLlamaServer } from '../src/real/llama-build.ts';
import { cachedModel } from '../src/real/model-cache.ts';
import { type LlamaReplicas, startLlamaReplicas } from '../src/real/replicas.ts';
import { decodeChars } from '../src/text/chars-tokenizer.ts';
import { SseSplitter } from '../src/text/sse.ts';

let binary: string;
const log = (line: string) => process.stderr.write(`${line}\n`);
before(async () => {
  binary = await ensureLlamaServer({ onProgress: log });
});

async function withFleet<T>(
  preset: 'tiny' | 'small',
  policy: string,
  options: Partial<GatewayOptions>,
  run: (gateway: Gateway, url: string, replicas: LlamaReplicas) => Promise<T>,
): Promise<T> {
  const model = await cachedModel(preset, 0, log);
  const replicas = await startLlamaReplicas({
    binary,
    model,
    count: 2,
    threads: 1,
    slots: 4,
    ctx: 16_384,
    cacheRamMiB: 0,
  });
  const costModel = costModelPreset('llamacpp-small-cpu');
  const gateway = createGateway({
    createPolicy: () => createGlobalPolicy(policy, { costModel, seed: 0 }),
    replicas: replicas.urls.map((url) => ({ url, dialect: 'llamacpp' as const })),
    // llama-server lists its model file's path in /v1/models; the tests ask for 'm'.
    model: 'm',
    // What four slots hold of this workload's prompts: E2's cache model must not think it has more.
    replicaKvTokens: 4 * 900,
    logLevel: 'silent',
    ...options,
  });
  try {
    return await run(gateway, await gateway.listen(0, '127.0.0.1'), replicas);
  } finally {
    await gateway.close();
    await replicas.stop();
  }
}

/** Sum of a counter over the replicas' own /metrics. */
async function replicaCounter(replicas: LlamaReplicas, name: string): Promise<number> {
  let sum = 0;
  for (const url of replicas.urls) {
    const text = await fetch(`${url}/metrics`).then((r) => r.text());
    sum += metricValues(text, [name]).get(name) ?? 0;
  }
  return sum;
}

describe('llama.cpp replicas behind the gateway', () => {
  it('on a shared-prefix workload e2 reaches a clearly higher share of cached prompt tokens than round robin', async () => {
    const requests = sharedPrefixRequests({
      requests: 36,
      prefixes: 6,
      prefixChars: 800,
      suffixChars: 40,
      outputTokens: 4,
      rps: 1,
      seed: 3,
    });
    const share: Record<string, number> = {};
    for (const policy of ['e2', 'round-robin']) {
      share[policy] = await withFleet('tiny', policy, {}, async (_gateway, url, replicas) => {
        let prompt = 0;
        let cached = 0;
        for (const r of requests) {
          // One at a time: slot races cannot blur the counts.
          const res = await fetch(`${url}/v1/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              model: 'm',
              prompt: decodeChars(r.tokens),
              max_tokens: 4,
              ignore_eos: true,
              temperature: 0,
            }),
          });
          assert.equal(res.status, 200);
          const body = (await res.json()) as {
            usage: { prompt_tokens: number; prompt_tokens_details?: { cached_tokens?: number } };
          };
          prompt += body.usage.prompt_tokens;
          cached += body.usage.prompt_tokens_details?.cached_tokens ?? 0;
        }
        // The replicas' own counters say the same as the answers they gave.
        assert.equal(await replicaCounter(replicas, 'llamacpp:prompt_tokens_total'), prompt - cached);
        return cached / prompt;
      });
    }
    log(`cached share: e2 ${share['e2']!.toFixed(3)}, round-robin ${share['round-robin']!.toFixed(3)}`);
    assert.ok(share['e2']! > share['round-robin']! + 0.15, JSON.stringify(share));
  });

  it('killing a replica mid-run loses no request that had not started streaming', async () => {
    await withFleet(
      'small',
      'round-robin',
      {
        health: { intervalSeconds: 0.2, timeoutSeconds: 1, unhealthyAfter: 1 },
        breaker: { failureThreshold: 1, openSeconds: 60 },
        retries: { attempts: 3, backoffSeconds: 0.01 },
      },
      async (gateway, url, replicas) => {
        const pool = new Pool(url, { connections: 64 });
        let streamingOnVictim = 0;
        const victim = replicas.urls[0]!;
        const outcomes = Array.from({ length: 20 }, async (_, i) => {
          const res = await pool.request({
            path: '/v1/completions',
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              model: 'm',
              prompt: `request ${i} `.repeat(40),
              max_tokens: 300,
              ignore_eos: true,
              stream: true,
            }),
          });
          const replica = String(res.headers['x-preble-replica']);
          const events = new SseSplitter();
          let started = false;
          let done = false;
          let error = false;
          for await (const chunk of res.body) {
            for (const { data } of events.push(chunk)) {
              if (data === '[DONE]') done = true;
              else if (data.includes('"error"')) error = true;
              else if (!started) {
                started = true;
                if (replica === victim) streamingOnVictim++;
              }
            }
          }
          return { status: res.statusCode, replica, started, done, error };
        });
        for (let i = 0; i < 3000 && streamingOnVictim === 0; i++) await new Promise((r) => setTimeout(r, 5));
        assert.ok(streamingOnVictim > 0, 'a stream from the victim had begun');
        await replicas.kill(0);
        const results = await Promise.all(outcomes);
        await pool.close();
        for (const r of results) {
          assert.equal(r.status, 200);
          assert.ok(r.done !== r.error, JSON.stringify(r));
          if (r.error)
            assert.equal(r.replica, victim, 'only streams under way on the killed replica end in error');
        }
        const failed = results.filter((r) => r.error).length;
        log(
          `kill: ${results.length - failed} completed, ${failed} streams cut on the killed replica, ${results.filter((r) => r.replica !== victim).length} on the other`,
        );
        assert.equal(gateway.replicas.get(0)!.view, 'gone');
        assert.deepEqual(
          gateway.replicas.all().map((r) => r.inflight),
          [0, 0],
        );
      },
    );
  });
});
