import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { percentiles } from '../report/stats.ts';

const BODY = (stream: boolean) =>
  JSON.stringify({
    model: 'm',
    prompt: 'You are a helpful assistant. Answer briefly: what is 2 + 2?',
    max_tokens: 3,
    stream,
  });

/** One request, read to the end; returns its latency in milliseconds. */
async function once(pool: Pool, stream: boolean): Promise<number> {
  const t0 = performance.now();
  const res = await pool.request({
    path: '/v1/completions',
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: BODY(stream),
  });
  for await (const _ of res.body) {
    // drain
  }
  if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
  return performance.now() - t0;
}

/** Open-loop load at `rps` for `seconds`: latency percentiles in milliseconds. */
export async function openLoop(url: string, rps: number, seconds: number, stream: boolean) {
  const pool = new Pool(url, { connections: 256 });
  const n = Math.round(rps * seconds);
  const start = performance.now();
  const latencies = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const wait = (i / rps) * 1000 - (performance.now() - start);
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      return once(pool, stream);
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
): Promise<number> {
  const pool = new Pool(url, { connections: concurrency });
  const end = performance.now() + seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        await once(pool, stream);
        done++;
      }
    }),
  );
  await pool.close();
  return done / seconds;
}
