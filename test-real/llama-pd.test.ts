/**
 * Integration: prefill/decode disaggregation on real llama-server replicas (tiny model, 1 thread):
 * the gateway moves each prefilled slot from a prefill replica to the decode replica through their
 * shared --slot-save-path (src/gateway/pd-llamacpp.ts). Run by `npm run test:real`.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { costModelPreset } from '../src/core/cost-model/presets.ts';
import { createGlobalPolicy } from '../src/core/policies/registry.ts';
import { slotBook } from '../src/gateway/pd-llamacpp.ts';
import { metricValues } from '../src/gateway/prometheus-text.ts';
import { createGateway, type Gateway, type GatewayOptions, type ReplicaSpec } from '../src/gateway/server.ts';
import { ensureLlamaServer } from '../src/real/llama-build.ts';
import { cachedModel } from '../src/real/model-cache.ts';
import { type LlamaPdReplicas, startLlamaPdReplicas } from '../src/real/replicas.ts';
import { SseSplitter } from '../src/text/sse.ts';

// biome-ignore lint/suspicious/noExplicitAny: JSON answers, read by their known shape
type Json = Record<string, any>;

const log = (line: string) => process.stderr.write(`${line}\n`);
let fleet: LlamaPdReplicas | undefined;
const gateways: Gateway[] = [];

before(async () => {
  const binary = await ensureLlamaServer({ onProgress: log });
  const model = await cachedModel('tiny', 0, log);
  // Two prefill and two decode replicas (one of each is killed below), sharing a slot directory.
  fleet = await startLlamaPdReplicas({
    binary,
    model,
    prefill: 2,
    decode: 2,
    threads: 1,
    slots: 2,
    ctx: 4096,
  });
});
after(async () => {
  for (const g of gateways) await g.close();
  await fleet?.stop();
});

async function gateway(replicas: ReplicaSpec[], policy: string, options: Partial<GatewayOptions> = {}) {
  const costModel = costModelPreset('llamacpp-small-cpu');
  const g = createGateway({
    createPolicy: () => createGlobalPolicy(policy, { costModel, seed: 0 }),
    replicas,
    model: 'm',
    replicaKvTokens: 4096,
    logLevel: 'silent',
    ...options,
  });
  gateways.push(g);
  return { gateway: g, url: await g.listen(0, '127.0.0.1') };
}

function pdSpecs(f: LlamaPdReplicas): ReplicaSpec[] {
  return [
    ...f.prefillUrls.map((url) => ({ url, role: 'prefill' as const, dialect: 'llamacpp' as const })),
    ...f.decodeUrls.map((url) => ({ url, role: 'decode' as const, dialect: 'llamacpp' as const })),
  ];
}

async function post(url: string, path: string, body: Json) {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', temperature: 0, ...body }),
  });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

/** Text, usage and the first token's timings of an answer, streamed or not. */
function read(kind: 'completions' | 'chat', stream: boolean, text: string) {
  if (!stream) {
    const j = JSON.parse(text);
    const out = kind === 'chat' ? j.choices[0].message.content : j.choices[0].text;
    return { out: String(out), usage: j.usage as Json, timings: j.timings as Json | undefined };
  }
  let out = '';
  let usage: Json = {};
  let timings: Json | undefined;
  for (const line of text.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const chunk = JSON.parse(line.slice(6));
    assert.equal(chunk.error, undefined, line);
    for (const c of chunk.choices ?? []) out += c.text ?? c.delta?.content ?? '';
    if (chunk.usage) usage = chunk.usage;
    timings ??= chunk.timings;
  }
  return { out, usage, timings };
}

async function counter(url: string, name: string): Promise<number> {
  const text = await fetch(`${url}/metrics`).then((r) => r.text());
  return metricValues(text, [name]).get(name) ?? 0;
}

/** A counter summed over the decode replicas that are up. */
async function decodeCounter(f: LlamaPdReplicas, name: string): Promise<number> {
  const values = await Promise.all(f.decodeUrls.map((url) => counter(url, name).catch(() => 0)));
  return values.reduce((a, b) => a + b, 0);
}

/**
 * Kill replica `index` while the gateway has a request on it (so the kill lands mid-run, whatever
 * the machine's speed): polls the gateway's in-flight count, and fails if no request ever gets there.
 */
async function killWhenBusy(f: LlamaPdReplicas, g: Gateway, index: number): Promise<void> {
  const url = f.urls[index]!;
  for (let i = 0; i < 20_000; i++) {
    if ((g.replicas.all().find((r) => r.url === url)?.inflight ?? 0) > 0) {
      await f.kill(index);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  throw new Error(`no request reached replica ${index} (${url})`);
}

/**
 * An answer read to its end: status, replicas, whether it completed, and the tokens before any break.
 * `onToken` hears each streamed token as it arrives, with the replica that sends it.
 */
async function answer(url: string, body: Json, onToken?: (replica: string) => void) {
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', temperature: 0, ...body }),
  });
  const replica = res.headers.get('x-preble-replica') ?? '';
  const prefillReplica = res.headers.get('x-preble-prefill-replica') ?? '';
  if (body['stream'] !== true) {
    const text = await res.text();
    const ok = res.status === 200 && JSON.parse(text).choices?.[0]?.text !== undefined;
    return { status: res.status, ok, chunksBeforeError: 0, replica, prefillReplica, text };
  }
  let chunks = 0;
  let broken = false;
  let done = false;
  let text = '';
  const splitter = new SseSplitter();
  const onLine = (line: string) => {
    if (line === '[DONE]') done = true;
    if (line === '' || line === '[DONE]') return;
    const chunk = JSON.parse(line);
    if (chunk.error !== undefined) broken = true;
    else if (!broken && (chunk.choices ?? []).some((c: Json) => typeof c.text === 'string')) {
      chunks++;
      onToken?.(replica);
    }
  };
  for await (const piece of res.body ?? []) {
    text += Buffer.from(piece as Uint8Array).toString();
    for (const event of splitter.push(piece as Uint8Array)) onLine(event.data);
  }
  return {
    status: res.status,
    ok: res.status === 200 && done && !broken,
    chunksBeforeError: broken ? chunks : 0,
    replica,
    prefillReplica,
    text,
  };
}

describe('llama.cpp prefill/decode disaggregation (real llama-server, slot save/restore)', () => {
  it('greedy text through PD equals colocated, and the decode replica reuses the moved prompt', async () => {
    const f = fleet!;
    const pd = await gateway(pdSpecs(f), 'distserve');
    // Colocated: the whole request on one replica (the second prefill replica, as a mixed one).
    const colocated = await gateway([{ url: f.prefillUrls[1]!, dialect: 'llamacpp' }], 'round-robin');
    const cases = [
      {
        kind: 'completions',
        stream: false,
        prompt: 'The quick brown fox jumps over the lazy dog. '.repeat(3),
      },
      { kind: 'chat', stream: true, prompt: 'Move this prompt from one replica to another. '.repeat(3) },
    ] as const;
    const processedBefore = await decodeCounter(f, 'llamacpp:prompt_tokens_total');
    let promptTokens = 0;
    for (const c of cases) {
      const path = c.kind === 'chat' ? '/v1/chat/completions' : '/v1/completions';
      const input =
        c.kind === 'chat' ? { messages: [{ role: 'user', content: c.prompt }] } : { prompt: c.prompt };
      const body = {
        ...input,
        max_tokens: 12,
        stream: c.stream,
        ...(c.stream ? { stream_options: { include_usage: true } } : {}),
      };
      const a = await post(pd.url, path, body);
      assert.equal(a.status, 200, a.text);
      assert.equal(a.headers.get('x-preble-pd-handoff'), 'kv', a.headers.get('x-preble-pd-recompute') ?? '');
      assert.ok(
        f.decodeUrls.includes(a.headers.get('x-preble-replica') ?? ''),
        'answered by a decode replica',
      );
      // Colocated as llama-server serves a prompt it holds in a slot: the prompt once for one token
      // (as the prefill leg), then the request, which reuses all but the last prompt token. So the
      // only difference from PD is where the KV was computed, and how it got to the decoding slot.
      const warm = await post(colocated.url, path, { ...body, stream: false, max_tokens: 1 });
      assert.equal(warm.status, 200, warm.text);
      const b = await post(colocated.url, path, body);
      assert.equal(b.status, 200, b.text);
      const pdAnswer = read(c.kind, c.stream, a.text);
      const coAnswer = read(c.kind, c.stream, b.text);
      assert.equal(pdAnswer.out, coAnswer.out, `${c.kind}: PD and colocated texts`);
      assert.equal(pdAnswer.usage.completion_tokens, coAnswer.usage.completion_tokens);
      const cached = pdAnswer.usage.prompt_tokens_details?.cached_tokens;
      // llama-server evaluates the prompt's last token again to sample from it: all the others are reused.
      assert.equal(cached, pdAnswer.usage.prompt_tokens - 1, `${c.kind}: cached on the decode replica`);
      assert.equal(
        pdAnswer.timings?.prompt_n,
        1,
        `${c.kind}: one prompt token computed on the decode replica`,
      );
      promptTokens += pdAnswer.usage.prompt_tokens;
      // For information: computed afresh, the last prompt token is evaluated inside the prompt's
      // batch rather than alone, and with random weights a near-tie between logits may then flip.
      const fresh = read(
        c.kind,
        c.stream,
        (await post(colocated.url, path, { ...body, cache_prompt: false })).text,
      );
      log(
        `pd ${c.kind}: ${pdAnswer.usage.prompt_tokens} prompt tokens, ${cached} cached on the decode replica ` +
          `(timings.prompt_n ${pdAnswer.timings?.prompt_n}), ${pdAnswer.usage.completion_tokens} output tokens, ` +
          `text equal to colocated: ${JSON.stringify(pdAnswer.out)}; ` +
          `fresh colocated (cache_prompt false) ${fresh.out === pdAnswer.out ? 'equal too' : `differs: ${JSON.stringify(fresh.out)}`}`,
      );
    }
    const processed = (await decodeCounter(f, 'llamacpp:prompt_tokens_total')) - processedBefore;
    log(`decode replicas: llamacpp:prompt_tokens_total +${processed} for ${promptTokens} prompt tokens`);
    assert.equal(processed, cases.length, 'the decode replicas computed one prompt token per request');
    assert.ok(readdirSync(f.slotSavePath).length >= 1, 'slot files in the shared directory');
    assert.ok(pd.gateway.replicas.all().every((r) => r.inflight === 0 && slotBook(r).reserved === 0));
  });

  it('a prefill replica killed mid-run loses no request: its prefills run again on the other one', async () => {
    const f = fleet!;
    const pd = await gateway(pdSpecs(f), 'distserve', {
      health: { intervalSeconds: 0 },
      breaker: { failureThreshold: 1, openSeconds: 60 },
      retries: { attempts: 3, backoffSeconds: 0.01 },
    });
    // Long prompts keep each prefill leg on its replica long enough for the kill to find one there.
    const pending = [0, 1, 2, 3, 4, 5, 6, 7].map((i) =>
      answer(pd.url, { prompt: `prefill ${i} `.repeat(120), max_tokens: 8, stream: i % 2 === 0 }),
    );
    await killWhenBusy(f, pd.gateway, 0);
    const results = await Promise.all(pending);
    for (const r of results) assert.ok(r.ok, `${r.status} ${r.text.slice(0, 300)}`);
    const moved = results.filter((r) => r.prefillReplica === f.prefillUrls[1]).length;
    log(
      `prefill kill: ${results.length} of ${results.length} requests in flight around the kill answered in full ` +
        `(${moved} prefilled on the surviving replica)`,
    );
    // After the kill, every prefill goes to the replica that is left.
    const after = await answer(pd.url, { prompt: 'after the kill '.repeat(20), max_tokens: 4 });
    assert.ok(after.ok, after.text);
    assert.equal(after.prefillReplica, f.prefillUrls[1]);
    assert.ok(pd.gateway.replicas.all().every((r) => r.inflight === 0 && slotBook(r).reserved === 0));
  });

  it('a decode replica killed mid-run loses no request that had not started streaming', async () => {
    const f = fleet!;
    const pd = await gateway(pdSpecs(f), 'distserve', {
      health: { intervalSeconds: 0 },
      breaker: { failureThreshold: 1, openSeconds: 60 },
      retries: { attempts: 3, backoffSeconds: 0.01 },
    });
    // Long answers keep each decode leg on its replica long enough for the kill to find one there;
    // the kill waits for a stream to have begun and takes the decode replica sending it (whichever the
    // policy chose), so both failure orderings occur: a stream already reaching its client, and legs
    // that had sent nothing yet.
    let victim: string | undefined;
    let streaming!: () => void;
    const begun = new Promise<void>((resolve) => {
      streaming = resolve;
    });
    const pending = [0, 1, 2, 3, 4, 5, 6, 7].map((i) =>
      answer(
        pd.url,
        {
          prompt: `decode ${i} `.repeat(30),
          max_tokens: 1500,
          ignore_eos: true,
          stream: i % 2 === 0,
        },
        (replica) => {
          if (victim === undefined && f.decodeUrls.includes(replica)) {
            victim = replica;
            streaming();
          }
        },
      ),
    );
    await begun;
    const killed = victim!;
    const survivor = f.decodeUrls.find((url) => url !== killed)!;
    await f.kill(f.urls.indexOf(killed));
    const results = await Promise.all(pending);
    const broken = results.filter((r) => !r.ok);
    for (const r of broken) {
      // Only a stream the client had begun to receive may end in an error event: anything that failed
      // before its first byte reached the client must have been decoded again elsewhere.
      assert.equal(r.status, 200, r.text.slice(0, 300));
      assert.ok(r.chunksBeforeError > 0, `failed before streaming began: ${r.text.slice(0, 300)}`);
      assert.equal(r.replica, killed, 'only the killed decode replica breaks streams');
    }
    log(
      `decode kill: ${results.length - broken.length} of ${results.length} requests answered in full; ` +
        `${broken.length} streams had begun on the killed replica and ended with an error event; ` +
        `${results.filter((r) => r.ok && r.replica === survivor).length} decoded on the surviving replica, ` +
        `${results.filter((r) => r.ok && r.replica === killed).length} on the killed one before its death`,
    );
    const after = await answer(pd.url, { prompt: 'after the decode kill '.repeat(20), max_tokens: 4 });
    assert.ok(after.ok, after.text);
    assert.equal(after.replica, survivor);
    assert.ok(pd.gateway.replicas.all().every((r) => r.inflight === 0 && slotBook(r).reserved === 0));
  });
});
