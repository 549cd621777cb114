import OpenAI from 'openai';
import {
  createEngineServer,
  type EngineServer,
  type EngineServerOptions,
} from '../../src/emulator/server.ts';

export const MODEL = 'mistral-7b-a6000';

export interface Running {
  readonly server: EngineServer;
  readonly url: string;
  readonly client: OpenAI;
  close(): Promise<void>;
}

/** A server on 127.0.0.1, a free port, 1000x time scale. */
export async function startServer(options: EngineServerOptions = {}): Promise<Running> {
  const server = createEngineServer({ timeScale: 1000, ...options });
  const { url } = await server.listen(0, '127.0.0.1');
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'x', maxRetries: 0 });
  return { server, url, client, close: () => server.close(1000) };
}

export async function postJson(
  url: string,
  body: unknown,
  raw = false,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: raw ? (body as string) : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

/** One metric's value (summed over its label sets) from Prometheus text. */
export function metricValue(text: string, name: string): number {
  let sum = 0;
  let found = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([^\s{]+)(?:\{[^}]*\})?\s+(\S+)$/.exec(line);
    if (m && m[1] === name) {
      sum += Number(m[2]);
      found = true;
    }
  }
  if (!found) throw new Error(`metric ${name} not found`);
  return sum;
}

/** Every sample of one metric from Prometheus text, with its labels. */
export function metricSamples(
  text: string,
  name: string,
): { labels: Record<string, string>; value: number }[] {
  const out: { labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([^\s{]+)(?:\{([^}]*)\})?\s+(\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const labels: Record<string, string> = {};
    for (const pair of (m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)) labels[pair[1]!] = pair[2]!;
    out.push({ labels, value: Number(m[3]) });
  }
  return out;
}

/** Poll `condition` (every few ms, up to ~5 s of polling) until it holds; throws if it never does. */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  what = 'condition',
): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (await condition()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
}
