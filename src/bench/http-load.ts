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
  /** Told the number of requests answered (or failed) so far, after each one (progress displays). */
  readonly onFinished?: (finished: number) => void;
}

/** What the client saw of one request (times in the requests' seconds: wall time x timeScale). */
export interface HttpRecord {
  readonly id: string;
  /** The HTTP status; 0 when no answer came (connection refused, reset, ...). */
  readonly status: number;
  /**
   * Why the request failed, as a kind to count by: `HTTP 404 model_not_found` (status and the error
   * body's code), `stream error replica_failed` (an error event inside a 200 stream), or
   * `connection error ECONNREFUSED`; undefined for a success.
   */
  readonly error?: string;
  readonly arrival: number;
  readonly ttft: number;
  readonly latency: number;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly outputTokens: number;
  readonly replica: string;
  /** The prefill replica of a disaggregated request (`x-preble-prefill-replica`); '' when none. */
  readonly prefillReplica: string;
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
  let finished = 0;
  const done = (record: HttpRecord): HttpRecord => {
    finished++;
    options.onFinished?.(finished);
    return record;
  };
  try {
    return await Promise.all(
      options.requests.map(async (r) => {
        const wait = (r.arrival / scale) * 1000 - (performance.now() - start);
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        const sent = elapsed();
        try {
          return done(await send(pool, options, r, elapsed, sent));
        } catch (error) {
          return done(failed(r, 0, sent, elapsed, `connection error ${errorCode(error)}`));
        }
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
  sent: number,
): Promise<HttpRecord> {
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
  if (res.statusCode !== 200) {
    const code = errorCodeOf(await res.body.text());
    return failed(
      r,
      res.statusCode,
      sent,
      elapsed,
      `HTTP ${res.statusCode}${code === undefined ? '' : ` ${code}`}`,
    );
  }
  let ttft = -1;
  let usage: Usage | undefined;
  let error: string | undefined;
  const events = new SseSplitter();
  for await (const chunk of res.body) {
    if (ttft < 0) ttft = elapsed() - sent;
    for (const { data } of events.push(chunk)) {
      if (data.includes('"usage":{')) usage = (JSON.parse(data) as { usage: Usage }).usage;
      else if (data.startsWith('{"error"')) error = `stream error ${errorCodeOf(data) ?? 'unknown'}`;
    }
  }
  return {
    id: r.id,
    status: res.statusCode,
    ...(error === undefined ? {} : { error }),
    arrival: sent,
    ttft,
    latency: elapsed() - sent,
    promptTokens: usage?.prompt_tokens ?? 0,
    cachedTokens: usage?.prompt_tokens_details?.cached_tokens ?? 0,
    outputTokens: usage?.completion_tokens ?? 0,
    replica: String(res.headers['x-preble-replica'] ?? ''),
    prefillReplica: String(res.headers['x-preble-prefill-replica'] ?? ''),
  };
}

function failed(
  r: WorkloadRequest,
  status: number,
  sent: number,
  elapsed: () => number,
  error: string,
): HttpRecord {
  return {
    id: r.id,
    status,
    error,
    arrival: sent,
    ttft: -1,
    latency: elapsed() - sent,
    promptTokens: 0,
    cachedTokens: 0,
    outputTokens: 0,
    replica: '',
    prefillReplica: '',
  };
}

/** The `code` (else `type`) of an OpenAI-style error body. */
function errorCodeOf(text: string): string | undefined {
  try {
    const error = (JSON.parse(text) as { error?: { code?: unknown; type?: unknown } }).error;
    const code = error?.code ?? error?.type;
    return typeof code === 'string' || typeof code === 'number' ? String(code) : undefined;
  } catch {
    return undefined;
  }
}

/** A connection failure's code (ECONNREFUSED, UND_ERR_SOCKET, ...), else its message. */
function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  return error instanceof Error ? error.message : String(error);
}
