import type { Pool } from 'undici';
import { SseSplitter } from '../text/sse.ts';

/** How one soak request ended, as the client saw it. */
export type SoakOutcome =
  | { readonly kind: 'completed' }
  /** A well-formed error answer: an OpenAI error body, or an SSE error event ending a stream. */
  | { readonly kind: 'refused'; readonly reason: string }
  /** The client gave up on purpose (a disconnect the soak injects). */
  | { readonly kind: 'aborted' }
  /** No well-formed answer: a reset, a hang past the deadline, a malformed body, a bare 5xx. */
  | { readonly kind: 'lost'; readonly why: string };

export interface SoakRequest {
  readonly path: string;
  readonly headers: Record<string, string>;
  /** The raw body (bad requests send broken JSON on purpose). */
  readonly body: string;
  readonly stream: boolean;
  /** Abort after this many milliseconds (a client that disconnects); undefined: never. */
  readonly abortAfterMs?: number;
  /** Give up and count the request lost after this long. */
  readonly deadlineMs: number;
}

/** The reason an OpenAI error body gives (its code, else its type), or undefined if it is not one. */
function errorReason(text: string): string | undefined {
  try {
    const e = (JSON.parse(text) as { error?: { code?: unknown; type?: unknown; message?: unknown } }).error;
    if (typeof e?.message !== 'string') return undefined;
    return typeof e.code === 'string' ? e.code : typeof e.type === 'string' ? e.type : 'error';
  } catch {
    return undefined;
  }
}

/** Send one request and classify its answer; never throws. */
export async function sendSoakRequest(pool: Pool, r: SoakRequest): Promise<SoakOutcome> {
  const controller = new AbortController();
  let aborted = false;
  let timedOut = false;
  const abortTimer =
    r.abortAfterMs === undefined
      ? undefined
      : setTimeout(() => {
          aborted = true;
          controller.abort();
        }, r.abortAfterMs);
  const deadline = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, r.deadlineMs);
  try {
    const res = await pool.request({
      path: r.path,
      method: 'POST',
      headers: r.headers,
      body: r.body,
      signal: controller.signal,
    });
    if (res.statusCode !== 200 || !r.stream) {
      const text = await res.body.text();
      if (res.statusCode === 200) {
        const ok = (JSON.parse(text) as { choices?: unknown[] }).choices?.length;
        return ok ? { kind: 'completed' } : { kind: 'lost', why: 'a 200 without choices' };
      }
      const reason = errorReason(text);
      return reason === undefined
        ? { kind: 'lost', why: `${res.statusCode} without an OpenAI error body` }
        : { kind: 'refused', reason };
    }
    const events = new SseSplitter();
    let done = false;
    let errorEvent: string | undefined;
    for await (const chunk of res.body) {
      for (const { data } of events.push(chunk)) {
        if (data === '[DONE]') done = true;
        else if (data.includes('"error"')) errorEvent = errorReason(data) ?? 'stream_error';
      }
    }
    if (errorEvent !== undefined) return { kind: 'refused', reason: `stream_${errorEvent}` };
    return done
      ? { kind: 'completed' }
      : { kind: 'lost', why: 'a stream that ended without [DONE] or an error event' };
  } catch (error) {
    if (aborted) return { kind: 'aborted' };
    if (timedOut) return { kind: 'lost', why: `no answer within ${r.deadlineMs} ms` };
    return { kind: 'lost', why: error instanceof Error ? error.message : String(error) };
  } finally {
    clearTimeout(abortTimer);
    clearTimeout(deadline);
  }
}
