/** Which part of a trace to replay, and how fast. */
export interface TraceWindow {
  /**
   * Re-timing factor: arrival' = arrival / scale, so 2 replays the trace twice as fast and 0.5 at
   * half speed. Default 1.
   */
  readonly scale?: number;
  /** At most this many requests (default: all). */
  readonly limit?: number;
  /** Skip this many rows first; arrivals then count from the first row kept. Default 0. */
  readonly offset?: number;
}

/** Options of a trace replay: the window plus the seed that draws its token ids. */
export interface TraceOptions extends TraceWindow {
  readonly seed: number;
}

export interface CheckedWindow {
  readonly scale: number;
  readonly limit: number;
  readonly offset: number;
}

/** The window with defaults filled in; throws on a non-positive scale or a negative limit/offset. */
export function checkWindow(window: TraceWindow): CheckedWindow {
  const { scale = 1, limit = Number.POSITIVE_INFINITY, offset = 0 } = window;
  if (!(scale > 0) || !Number.isFinite(scale))
    throw new Error(`trace scale must be a positive number, got ${scale}`);
  if (!(limit >= 0) || (Number.isFinite(limit) && !Number.isInteger(limit))) {
    throw new Error(`trace limit must be a non-negative integer, got ${limit}`);
  }
  if (!(offset >= 0) || !Number.isInteger(offset)) {
    throw new Error(`trace offset must be a non-negative integer, got ${offset}`);
  }
  return { scale, limit, offset };
}

/** Items `offset .. offset + limit - 1` of a stream, lazily (stops reading once the limit is reached). */
export function* slice<T>(items: Iterable<T>, offset: number, limit: number): Generator<T> {
  if (limit <= 0) return;
  let index = 0;
  let taken = 0;
  for (const item of items) {
    if (index++ < offset) continue;
    yield item;
    if (++taken >= limit) return;
  }
}

/** An iterable that runs `generate` afresh on every iteration, so a replay can be iterated twice. */
export function reiterable<T>(generate: () => Iterator<T>): Iterable<T> {
  return { [Symbol.iterator]: generate };
}
