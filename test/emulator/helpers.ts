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
