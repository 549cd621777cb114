import type { WallClockDriver } from './driver.ts';

/** What every route needs. */
export interface ServerContext {
  readonly driver: WallClockDriver;
  /** The model name this replica serves. */
  readonly model: string;
  /** Offset into the generated filler text (from --seed). */
  readonly textOffset: number;
  nextId(prefix: string): string;
}
