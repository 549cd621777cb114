/**
 * What the metrics need to know about one request. Times are seconds on the simulation (or
 * gateway) clock; -1 means "has not happened" (the simulator's convention for unfinished requests).
 */
export interface RequestRecord {
  readonly id: string;
  readonly workload: string;
  readonly instance: number;
  readonly arrival: number;
  /** Routed to the instance. */
  readonly dispatch: number;
  /** Admitted into a batch (queueing ends). */
  readonly start: number;
  readonly firstToken: number;
  readonly finish: number;
  readonly promptTokens: number;
  /** Prompt tokens served from the instance's cache. */
  readonly cachedTokens: number;
  readonly outputTokens: number;
}

/** A request counts as completed once it has both a first token and a finish time. */
export function isCompleted(record: RequestRecord): boolean {
  return record.finish >= 0 && record.firstToken >= 0;
}

/** Time to first token. */
export function ttftOf(record: RequestRecord): number {
  return record.firstToken - record.arrival;
}

/** Time per output token after the first; undefined with a single output token (no decode step). */
export function tpotOf(record: RequestRecord): number | undefined {
  return record.outputTokens > 1
    ? (record.finish - record.firstToken) / (record.outputTokens - 1)
    : undefined;
}
