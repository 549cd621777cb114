import type { WallClockDriver } from './driver.ts';
import type { Faults } from './faults.ts';

/** What every route needs. */
export interface ServerContext {
  readonly driver: WallClockDriver;
  /** The model name this replica serves. */
  readonly model: string;
  /** Offset into the generated filler text (from --seed). */
  readonly textOffset: number;
  /** Injected misbehaviours (off unless asked for). */
  readonly faults: Faults;
}
