import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { percentiles } from '../report/stats.ts';

/** The default prompt: short, so that the gateway's own overhead is what gets measured. */
export const SHORT_PROMPT = 'You are a helpful assistant. Answer briefly: what is 2 + 2?';

const WORDS =
  'the quick brown fox jumps over a lazy dog while an assistant answers every user politely'.split(' ');

/**
 * A prompt of exactly `chars` characters made of English words (so that a BPE tokenizer merges as
 * it would on real text, rather than seeing one repeated character).
 */
export function benchPrompt(chars: number): string {
  let text = '';
  for (let i = 0; text.length < chars; i++) text += `${WORDS[(i * 7) % WORDS.length]} `;
  return text.slice(0, chars);
}

const body = (prompt: string, stream: boolean) =>
  JSON.stringify({ model: 'm', prompt, max_tokens: 3, stream });

/** One request, read to the end; returns its latency in milliseconds. */
async function once(pool: Pool, prompt: string, stream: boolean): Promise<number> {
  const t0 = performance.now();
  const res = await pool.request({
    path: '/v1/completions',
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: body(prompt, stream),
  });
  for await (const _ of res.body) {
    // drain
  }
  if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
  return performance.now() - t0;
}

/** Open-loop load at `rps` for `seconds`: latency percentiles in milliseconds. */
export async function openLoop(
  url: string,
  rps: number,
  seconds: number,
  stream: boolean,
  prompt = SHORT_PROMPT,
) {
  const pool = new Pool(url, { connections: 256 });
  const n = Math.round(rps * seconds);
  const start = performance.now();
  const latencies = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const wait = (i / rps) * 1000 - (performance.now() - start);
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      return once(pool, prompt, stream);
    }),
  );
  await pool.close();
  return percentiles(latencies);
}

/** Closed loop with `concurrency` clients for `seconds`: sustained requests per second. */
export async function maxRate(
  url: string,
  concurrency: number,
  seconds: number,
  stream: boolean,
  prompt = SHORT_PROMPT,
): Promise<number> {
  const pool = new Pool(url, { connections: concurrency });
  const end = performance.now() + seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        await once(pool, prompt, stream);
        done++;
      }
    }),
  );
  await pool.close();
  return done / seconds;
}
