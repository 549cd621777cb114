import type {
  FinishCounts,
  FleetRequest,
  GlobalPolicy,
  InstanceId,
  InstanceInfo,
  InstanceLoadSignal,
  Role,
  RouteDecision,
  RouteRequest,
  Tokens,
} from '../../src/core/types.ts';

/** One call a policy received, with its arguments (token arrays copied). */
export type RecordedCall =
  | { readonly method: 'route'; readonly id: string; readonly now: number; readonly decision: RouteDecision }
  | { readonly method: 'requestStarted'; readonly id: string; readonly now: number }
  | { readonly method: 'requestFirstToken'; readonly id: string; readonly now: number }
  | {
      readonly method: 'requestFinished';
      readonly id: string;
      readonly now: number;
      readonly counts: FinishCounts;
    }
  | { readonly method: 'requestFailed'; readonly id: string; readonly now: number }
  | {
      readonly method: 'kvReady' | 'kvArrived';
      readonly id: string;
      readonly instance: InstanceId;
      readonly path: Tokens;
      readonly now: number;
    }
  | {
      readonly method: 'routeDecode';
      readonly id: string;
      readonly prefillInstance: InstanceId;
      readonly kvTokens: number;
      readonly decode: InstanceId;
      readonly now: number;
    }
  | {
      readonly method: 'instanceEvicted';
      readonly instance: InstanceId;
      readonly path: Tokens;
      readonly keptTokens: number;
      readonly now: number;
      /** When the engine evicted, where the face knows it (the simulator: the iteration's start). */
      readonly evictedAt: number | undefined;
    }
  | {
      readonly method: 'instanceAdded' | 'instanceDrained' | 'instanceRemoved';
      readonly instance: InstanceId;
      readonly now: number;
    }
  | {
      readonly method: 'instanceRoleChanged';
      readonly instance: InstanceId;
      readonly role: Role;
      readonly now: number;
    }
  | { readonly method: 'loadSignal'; readonly instance: InstanceId; readonly now: number }
  | { readonly method: 'tick'; readonly now: number };

/**
 * A GlobalPolicy that records every call it gets, with its arguments, and passes it on to the policy
 * it wraps (which makes the decisions). `calls` is in the order the calls were made.
 */
export class RecordingPolicy implements GlobalPolicy {
  readonly calls: RecordedCall[] = [];

  constructor(private readonly inner: GlobalPolicy) {}

  get name(): string {
    return this.inner.name;
  }

  get branches(): readonly string[] {
    return this.inner.branches;
  }

  /** The calls about one request id, in order. */
  of(id: string): RecordedCall[] {
    return this.calls.filter((c) => 'id' in c && c.id === id);
  }

  evictions(): Extract<RecordedCall, { method: 'instanceEvicted' }>[] {
    return this.calls.filter((c) => c.method === 'instanceEvicted');
  }

  route(request: RouteRequest, now: number): RouteDecision {
    const decision = this.inner.route(request, now);
    this.calls.push({ method: 'route', id: request.id, now, decision });
    return decision;
  }

  requestStarted(id: string, now: number): void {
    this.calls.push({ method: 'requestStarted', id, now });
    this.inner.requestStarted(id, now);
  }

  requestFirstToken(id: string, now: number): void {
    this.calls.push({ method: 'requestFirstToken', id, now });
    this.inner.requestFirstToken(id, now);
  }

  requestFinished(id: string, now: number, counts: FinishCounts): void {
    this.calls.push({ method: 'requestFinished', id, now, counts });
    this.inner.requestFinished(id, now, counts);
  }

  requestFailed(id: string, now: number): void {
    this.calls.push({ method: 'requestFailed', id, now });
    this.inner.requestFailed(id, now);
  }

  instanceEvicted(
    instance: InstanceId,
    path: Tokens,
    keptTokens: number,
    now: number,
    evictedAt?: number,
  ): void {
    this.calls.push({ method: 'instanceEvicted', instance, path: path.slice(), keptTokens, now, evictedAt });
    this.inner.instanceEvicted(instance, path, keptTokens, now, evictedAt);
  }

  instanceAdded(instance: InstanceId, info: InstanceInfo, now: number): void {
    this.calls.push({ method: 'instanceAdded', instance, now });
    this.inner.instanceAdded(instance, info, now);
  }

  instanceDrained(instance: InstanceId, now: number): void {
    this.calls.push({ method: 'instanceDrained', instance, now });
    this.inner.instanceDrained(instance, now);
  }

  instanceRemoved(instance: InstanceId, now: number): void {
    this.calls.push({ method: 'instanceRemoved', instance, now });
    this.inner.instanceRemoved(instance, now);
  }

  instanceRoleChanged(instance: InstanceId, role: Role, now: number): void {
    this.calls.push({ method: 'instanceRoleChanged', instance, role, now });
    this.inner.instanceRoleChanged?.(instance, role, now);
  }

  /** Passed through unrecorded: the fleet applies them and reports them back as calls. */
  fleetRequests(now: number): readonly FleetRequest[] {
    return this.inner.fleetRequests?.(now) ?? [];
  }

  loadSignal(instance: InstanceId, signal: InstanceLoadSignal, now: number): void {
    this.calls.push({ method: 'loadSignal', instance, now });
    this.inner.loadSignal(instance, signal, now);
  }

  tick(now: number): void {
    this.calls.push({ method: 'tick', now });
    this.inner.tick(now);
  }

  routeDecode(
    id: string,
    prefillInstance: InstanceId,
    kvTokens: number,
    now: number,
    avoid?: readonly InstanceId[],
  ): InstanceId {
    if (this.inner.routeDecode === undefined)
      throw new Error(`policy ${this.inner.name} has no routeDecode (a colocated policy)`);
    const decode = this.inner.routeDecode(id, prefillInstance, kvTokens, now, avoid);
    this.calls.push({ method: 'routeDecode', id, prefillInstance, kvTokens, decode, now });
    return decode;
  }

  kvReady(id: string, instance: InstanceId, path: Tokens, now: number): void {
    this.calls.push({ method: 'kvReady', id, instance, path: path.slice(), now });
    this.inner.kvReady?.(id, instance, path, now);
  }

  kvArrived(id: string, instance: InstanceId, path: Tokens, now: number): void {
    this.calls.push({ method: 'kvArrived', id, instance, path: path.slice(), now });
    this.inner.kvArrived?.(id, instance, path, now);
  }
}

/**
 * What is wrong with one request's calls against the contract (docs/design.md): route, then
 * requestStarted, requestFirstToken and requestFinished or requestFailed, each at most once, in that
 * order, at non-decreasing times. A disaggregated request (routed with `decode`) has kvReady,
 * routeDecode (for 'at-kv-ready' only) and kvArrived between its first token and its end, and a
 * colocated one none of them. Empty when nothing is.
 */
export function contractViolations(calls: readonly RecordedCall[]): string[] {
  const route = calls.find((c) => c.method === 'route');
  const decode = route?.method === 'route' ? route.decision?.decode : undefined;
  if (decode !== undefined && calls.some((c) => c.method === 'kvReady'))
    return journeyViolations(
      calls,
      decode === 'at-kv-ready'
        ? ['route', 'requestStarted', 'requestFirstToken', 'kvReady', 'routeDecode', 'kvArrived', 'end']
        : ['route', 'requestStarted', 'requestFirstToken', 'kvReady', 'kvArrived', 'end'],
    );
  // A colocated request, or a disaggregated one that ended at its prefill (one output token).
  return journeyViolations(calls, ['route', 'requestStarted', 'requestFirstToken', 'end']);
}

function journeyViolations(calls: readonly RecordedCall[], order: readonly string[]): string[] {
  const problems: string[] = [];
  let stage = -1;
  let last = Number.NEGATIVE_INFINITY;
  for (const c of calls) {
    const at = order.indexOf(
      c.method === 'requestFinished' || c.method === 'requestFailed' ? 'end' : c.method,
    );
    if (at < 0) problems.push(`${c.method} is not part of this journey`);
    else if (at <= stage) problems.push(`${c.method} after ${order[stage]}`);
    if (c.now < last) problems.push(`${c.method} at ${c.now} before the previous call at ${last}`);
    stage = Math.max(stage, at);
    last = Math.max(last, c.now);
  }
  if (stage < order.length - 1) problems.push(`ended at ${order[stage] ?? 'nothing'}`);
  return problems;
}
