/**
 * A Provisioner (src/core/provisioning) in the simulator: asked at every tick (`SimulatorOptions.onTick`)
 * with the fleet, the arrivals and the policy's `workersWanted`; its `add` becomes a fleet action at
 * now + the start-up delay (the worker is ready then, and paid for from the decision on), its removals
 * and role changes act at once. `provisioningFigures` reads the GPU-seconds off the run.
 */
import type { ProvisionAction, ProvisionedInstance, Provisioner } from '../core/provisioning/types.ts';
import type { GlobalPolicy, InstanceId, Role } from '../core/types.ts';
import type { FleetAction, SimInstance, SimResult, TickFleet } from './simulator.ts';

export interface ProvisioningSetup {
  readonly provisioner: Provisioner;
  /** Seconds from the decision to add a worker to its readiness (loading the model). */
  readonly startupSeconds: number;
  /** The instance an `add` of `role` builds (the run's own hardware). */
  readonly template: (role: Role) => SimInstance;
}

/** What a run with a provisioner adds to its report. */
export interface ProvisioningFigures {
  readonly provisioner: string;
  readonly startupSeconds: number;
  /** GPUs x seconds each instance was held: from the start (an added one: from the decision) to its removal or the end. */
  readonly gpuSeconds: number;
  /** gpuSeconds over the run's duration. */
  readonly meanGpus: number;
  readonly peakInstances: number;
  readonly added: number;
  readonly removed: number;
}

export interface ProvisioningHook {
  readonly onTick: (now: number, fleet: TickFleet) => readonly FleetAction[];
  /** When each add was decided, in the order the adds were scheduled. */
  readonly decidedAt: number[];
}

/** The simulator's `onTick` for a provisioner, and the log it keeps for the figures. */
export function provisioningHook(setup: ProvisioningSetup, policy: GlobalPolicy): ProvisioningHook {
  const decidedAt: number[] = [];
  let last: number | undefined;
  let starting: Role[] = [];
  const onTick = (now: number, fleet: TickFleet): FleetAction[] => {
    const elapsed = last === undefined ? 0 : now - last;
    last = now;
    // Adds decided earlier and not in the fleet yet are `starting`; the fleet's new ones were they.
    const pending = decidedAt.filter((t) => t + setup.startupSeconds > now).length;
    starting = starting.slice(starting.length - pending);
    const instances: ProvisionedInstance[] = [
      ...fleet.instances
        .filter((i) => i.standing !== 'removed')
        .map((i) => ({
          id: i.id,
          role: i.role,
          state: i.standing === 'active' ? ('active' as const) : ('draining' as const),
          inflight: i.inflight,
        })),
      ...starting.map((role) => ({ id: -1, role, state: 'starting' as const, inflight: 0 })),
    ];
    const wanted = policy.workersWanted?.(now);
    const actions = setup.provisioner.tick(now, {
      instances,
      arrivals: fleet.arrivals,
      elapsed,
      ...(wanted === undefined ? {} : { wanted }),
    });
    return actions.map((a) => toFleetAction(a, now, setup, decidedAt, starting));
  };
  return { onTick, decidedAt };
}

function toFleetAction(
  a: ProvisionAction,
  now: number,
  setup: ProvisioningSetup,
  decidedAt: number[],
  starting: Role[],
): FleetAction {
  if (a.action !== 'add') return { ...a, at: now };
  decidedAt.push(now);
  starting.push(a.role);
  return { at: now + setup.startupSeconds, action: 'add', spec: setup.template(a.role) };
}

/**
 * GPU-seconds of the run: each instance from the run's start (an added one from its decision,
 * start-up included) to its removal or the run's end.
 */
export function provisioningFigures(
  setup: ProvisioningSetup,
  hook: ProvisioningHook,
  result: SimResult,
  gpusOf: (instance: InstanceId) => number,
  start: number,
): ProvisioningFigures {
  const end = start + result.durationSeconds;
  const from = new Map<InstanceId, number>();
  const to = new Map<InstanceId, number>();
  let added = 0;
  let removed = 0;
  for (const e of result.fleetLog) {
    if (e.event === 'added' && e.by === 'provisioner') from.set(e.instance, hook.decidedAt[added++] ?? e.at);
    if (e.event === 'removed') {
      to.set(e.instance, e.at);
      if (e.by === 'provisioner') removed++;
    }
  }
  // Timeline of instances held, for the peak.
  const marks: [number, number][] = [];
  let gpuSeconds = 0;
  for (let i = 0; i < result.engines.length; i++) {
    const a = from.get(i) ?? start;
    const b = Math.max(a, Math.min(end, to.get(i) ?? end));
    gpuSeconds += gpusOf(i) * (b - a);
    marks.push([a, 1], [b, -1]);
  }
  marks.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let held = 0;
  let peak = 0;
  for (const [, d] of marks) {
    held += d;
    peak = Math.max(peak, held);
  }
  return {
    provisioner: setup.provisioner.name,
    startupSeconds: setup.startupSeconds,
    gpuSeconds,
    meanGpus: result.durationSeconds > 0 ? gpuSeconds / result.durationSeconds : 0,
    peakInstances: peak,
    added,
    removed,
  };
}
