/**
 * The Provisioner contract (docs/provisioning.md): at each heartbeat a provisioner sees the fleet and
 * the traffic since the last one, and answers with fleet actions. Pure: the caller (the simulator's
 * src/sim/provisioning.ts) carries them out, an added worker becoming ready after its start-up delay.
 */
import type { FleetRequest, InstanceId, Role } from '../types.ts';

/** Add one worker of `role`, built like the fleet's own (the caller knows the hardware); or drain, remove, set role. */
export type ProvisionAction = { readonly action: 'add'; readonly role: Role } | FleetRequest;

export interface ProvisionedInstance {
  readonly id: InstanceId;
  readonly role: Role;
  /** `starting`: asked for, not ready yet (no id of its own yet: -1); `draining`: takes no new work. */
  readonly state: 'starting' | 'active' | 'draining';
  /** Requests in flight there. */
  readonly inflight: number;
}

export interface FleetState {
  readonly instances: readonly ProvisionedInstance[];
  /** Requests that arrived since the previous heartbeat, over `elapsed` seconds. */
  readonly arrivals: number;
  readonly elapsed: number;
  /** Workers the policy would use now (its own packing; `GlobalPolicy.workersWanted`), when it says. */
  readonly wanted?: number;
}

export interface Provisioner {
  readonly name: string;
  tick(now: number, fleet: FleetState): readonly ProvisionAction[];
}
