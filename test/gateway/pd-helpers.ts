import assert from 'node:assert/strict';

// Helpers shared by the gateway's prefill/decode tests (pd, pd-sglang, pd-llamacpp).

// biome-ignore lint/suspicious/noExplicitAny: JSON answers, read by their known shape
export type Json = Record<string, any>;

/** POST a JSON body (with `model`) and read the whole answer as text. */
export async function postJson(
  url: string,
  path: string,
  body: Record<string, unknown>,
  model: string,
  signal?: AbortSignal,
) {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, ...body }),
    ...(signal === undefined ? {} : { signal }),
  });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

/**
 * The text of an SSE stream of completions or chat chunks and its usage chunk (undefined without
 * one); `checkErrors` fails on an error event in the stream.
 */
export function sseAnswer(text: string, checkErrors = true): { out: string; usage: Json | undefined } {
  let out = '';
  let usage: Json | undefined;
  for (const line of text.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const chunk = JSON.parse(line.slice(6));
    if (checkErrors) assert.equal(chunk.error, undefined, line);
    for (const c of chunk.choices ?? []) out += c.text ?? c.delta?.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  return { out, usage };
}

/** The answer's text and usage, streamed (SSE) or not. */
export function readAnswer(
  kind: 'completions' | 'chat',
  stream: boolean,
  text: string,
  checkErrors = true,
): { out: string; usage: Json } {
  if (!stream) {
    const json = JSON.parse(text);
    return {
      out: kind === 'chat' ? json.choices[0].message.content : json.choices[0].text,
      usage: json.usage,
    };
  }
  const { out, usage } = sseAnswer(text, checkErrors);
  return { out, usage: usage ?? {} };
}

/** Waits (up to 5 s) for every count to reach zero, then asserts they all did. */
export async function settle(counts: () => Record<string, number>): Promise<void> {
  const zero = (c: Record<string, number>) => Object.values(c).every((v) => v === 0);
  for (let i = 0; i < 500 && !zero(counts()); i++) await new Promise((r) => setTimeout(r, 10));
  const c = counts();
  assert.deepEqual(c, Object.fromEntries(Object.keys(c).map((k) => [k, 0])));
}

/**
 * The four requests the PD tests compare with colocated answers: completions and chat, each not
 * streamed and streamed (asking for the usage chunk unless `streamUsage` is false), with `fields`.
 */
export function* requestShapes(prompt: string, fields: Record<string, unknown>, streamUsage = true) {
  for (const kind of ['completions', 'chat'] as const) {
    const path = kind === 'chat' ? '/v1/chat/completions' : '/v1/completions';
    const input = kind === 'chat' ? { messages: [{ role: 'user', content: prompt }] } : { prompt };
    for (const stream of [false, true]) {
      const usage = stream && streamUsage ? { stream_options: { include_usage: true } } : {};
      yield { kind, stream, path, body: { ...input, ...fields, stream, ...usage } };
    }
  }
}
