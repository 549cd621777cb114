import type { Role } from '../core/types.ts';
import type { DialectName } from '../gateway/config.ts';

/** What one replica's engine counted over a run (emulated replicas: their /metrics). */
export interface EngineCounters {
  /** Prompt tokens it looked up in its prefix cache, and those it found there. */
  readonly promptTokens: number;
  readonly cachedTokens: number;
  /** Its requests' waiting time before admission, summed, and how many requests (engine seconds). */
  readonly queueSeconds: number;
  readonly queued: number;
}

/** The replicas one policy's run gets: fresh ones, started on free local ports. */
export interface Fleet {
  readonly urls: readonly string[];
  readonly dialect: DialectName;
  /** Each replica's role (prefill/decode disaggregation), in `urls` order. */
  readonly roles: readonly Role[];
  /** Seconds each replica spent on prompts, as it reports them (real engines only). */
  promptSeconds?(): Promise<number[]>;
  /** What each replica's engine counted (emulated replicas). */
  engineCounters?(): Promise<EngineCounters[]>;
  stop(): Promise<void>;
}

/** How a run wants its replicas: their roles, and the engines' waiting-queue policy. */
export interface FleetLayout {
  readonly roles: readonly Role[];
  /** The engines' queue policy (the simulator's `auto` for the run's policy). */
  readonly queuePolicy: string;
}

export type FleetFactory = (count: number, layout?: FleetLayout) => Promise<Fleet>;
