import type { Dispatcher, Pool } from 'undici';

/**
 * The connection closed under a request before any answer came back (`other side closed`, a reset, a
 * broken pipe): what a stale kept-alive connection gives. A refused or timed-out connect is not this.
 */
export function lostConnection(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'UND_ERR_SOCKET' || code === 'ECONNRESET' || code === 'EPIPE';
}

/**
 * `pool.request`, sent once more (on another or a new connection of the pool) when the kept-alive
 * connection it went out on was lost before any answer: llama-server closes some connections after a streamed answer without
 * saying so, and the request written onto one is no fault of the replica. A second loss, an abort, or
 * any other error is thrown as it came. The body must be replayable (a string, not a stream).
 */
export async function requestResending(
  pool: Pool,
  options: Dispatcher.RequestOptions & { body?: string; signal?: AbortSignal },
  onResend?: () => void,
): Promise<Dispatcher.ResponseData> {
  try {
    return await pool.request(options);
  } catch (error) {
    if (options.signal?.aborted === true || !lostConnection(error)) throw error;
    onResend?.();
    return pool.request(options);
  }
}
