import type { WallClockDriver } from './driver.ts';
import type { Faults } from './faults.ts';
import type { KvHolder, KvPuller } from './pd.ts';

/** What every route needs. */
export interface ServerContext {
  readonly driver: WallClockDriver;
  /** The model name this replica serves. */
  readonly model: string;
  /** Offset into the generated filler text (from --seed). */
  readonly textOffset: number;
  /** Injected misbehaviours (off unless asked for). */
  readonly faults: Faults;
  /** mixed: whole requests; prefill: holds KV for a decode engine; decode: pulls it (pd.ts). */
  readonly role: 'mixed' | 'prefill' | 'decode';
  /** The prefill role's held KV. */
  readonly kvHolder?: KvHolder | undefined;
  /** The decode role's KV pulls. */
  readonly kvPuller?: KvPuller | undefined;
}
