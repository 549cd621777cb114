import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { SseSplitter } from '../text/sse.ts';
import type { WorkloadRequest } from '../workloads/types.ts';

export interface HttpLoadOptions {
  /** Base URL of an OpenAI-compatible server (the gateway or a replica). */
  readonly url: string;
  readonly model: string;
  /** Requests with arrival times in seconds; they are sent open-loop at arrival / timeScale. */
  readonly requests: readonly WorkloadRequest[];
  /** Token ids to prompt text. */
  readonly render: (tokens: Uint32Array) => string;
  /** Arrival times are divided by this (replicas emulating time faster than real). Default 1. */
  readonly timeScale?: number;
  readonly connections?: number;
  /** Fields added to every request body (e.g. llama.cpp's `ignore_eos` for fixed output lengths). */
  readonly extraBody?: Readonly<Record<string, unknown>>;
}

/** What the client saw of one request (times in the requests' seconds: wall time x timeScale). */
export interface HttpRecord {
  readonly id: string;
  readonly status: number;
  readonly arrival: number;
  readonly ttft: number;
  readonly latency: number;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly outputTokens: number;
  readonly replica: string;
}

interface Usage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
}

/** Open-loop load: every request streamed as a completion, with TTFT, latency and the server's usage. */
export async function runHttpLoad(options: HttpLoadOptions): Promise<HttpRecord[]> {
  const scale = options.timeScale ?? 1;
  const pool = new Pool(new URL(options.url).origin, { connections: options.connections ?? 256 });
  const start = performance.now();
  const elapsed = () => ((performance.now() - start) / 1000) * scale;
  try {
    return await Promise.all(
      options.requests.map(async (r) => {
        const wait = (r.arrival / scale) * 1000 - (performance.now() - start);
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        return send(pool, options, r, elapsed);
      }),
    );
  } finally {
    await pool.close();
  }
}

async function send(
  pool: Pool,
  options: HttpLoadOptions,
  r: WorkloadRequest,
  elapsed: () => number,
): Promise<HttpRecord> {
  const sent = elapsed();
  const res = await pool.request({
    path: '/v1/completions',
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: options.model,
      prompt: options.render(r.tokens),
      max_tokens: r.outputTokens,
      stream: true,
      stream_options: { include_usage: true },
      ...options.extraBody,
    }),
  });
  let ttft = -1;
  let usage: Usage | undefined;
  const events = new SseSplitter();
  for await (const chunk of res.body) {
    if (ttft < 0) ttft = elapsed() - sent;
    for (const { data } of events.push(chunk)) {
      if (data.includes('"usage":{')) usage = (JSON.parse(data) as { usage: Usage }).usage;
    }
  }
  return {
    id: r.id,
    status: res.statusCode,
    arrival: sent,
    ttft,
    latency: elapsed() - sent,
    promptTokens: usage?.prompt_tokens ?? 0,
    cachedTokens: usage?.prompt_tokens_details?.cached_tokens ?? 0,
    outputTokens: usage?.completion_tokens ?? 0,
    replica: String(res.headers['x-preble-replica'] ?? ''),
  };
}
