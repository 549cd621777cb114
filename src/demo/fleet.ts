import type { DialectName } from '../gateway/config.ts';

/** The replicas one policy's run gets: fresh ones, started on free local ports. */
export interface Fleet {
  readonly urls: readonly string[];
  readonly dialect: DialectName;
  /** Seconds each replica spent on prompts, as it reports them (real engines only). */
  promptSeconds?(): Promise<number[]>;
  stop(): Promise<void>;
}

export type FleetFactory = (count: number) => Promise<Fleet>;
