import { ClusterView, NoInstanceAvailableError } from '../cluster-view.ts';
import type {
  FinishCounts,
  GlobalPolicy,
  InstanceCost,
  InstanceId,
  InstanceInfo,
  InstanceLoadSignal,
  MigrationOutcome,
  Role,
  RouteDecision,
  RouteRequest,
  Tokens,
} from '../types.ts';

/** The cost list of policies that compare no costs: one frozen array, so a decision allocates nothing. */
export const NO_COSTS: readonly never[] = Object.freeze([]);

/**
 * The part every global policy shares: instance lifecycle and in-flight accounting through a
 * ClusterView, so that all policies count and release requests identically. A policy implements
 * `choose` and overrides the hooks it needs; each hook runs after the shared bookkeeping.
 */
export abstract class BasePolicy<C extends InstanceCost = InstanceCost> implements GlobalPolicy {
  abstract readonly name: string;
  abstract readonly branches: readonly string[];
  protected readonly view = new ClusterView();

  /** Pick an instance among `active` (never empty). */
  protected abstract choose(
    request: RouteRequest,
    now: number,
    active: readonly InstanceId[],
  ): RouteDecision<C>;

  route(request: RouteRequest, now: number): RouteDecision<C> {
    const decision =
      request.avoid === undefined || request.avoid.length === 0
        ? this.chooseAmongActive(request, now)
        : this.view.withAvoided(request.avoid, () => this.chooseAmongActive(request, now));
    this.view.begin(request.id, decision.instance);
    this.onRouted(request, decision, now);
    return decision;
  }

  private chooseAmongActive(request: RouteRequest, now: number): RouteDecision<C> {
    const active = this.view.active;
    if (active.length === 0) throw new NoInstanceAvailableError();
    return this.choose(request, now, active);
  }

  requestStarted(_id: string, _now: number): void {}

  requestFirstToken(_id: string, _now: number): void {}

  requestFinished(id: string, now: number, counts: FinishCounts): void {
    const instance = this.view.end(id);
    if (instance !== undefined) this.onReleased(id, instance, now, counts);
  }

  requestFailed(id: string, now: number): void {
    const instance = this.view.end(id);
    if (instance !== undefined) this.onReleased(id, instance, now, undefined);
  }

  instanceEvicted(
    _instance: InstanceId,
    _path: Tokens,
    _keptTokens: number,
    _now: number,
    _evictedAt?: number,
  ): void {}

  instanceAdded(instance: InstanceId, info: InstanceInfo, _now: number): void {
    this.view.add(instance, info);
  }

  instanceDrained(instance: InstanceId, _now: number): void {
    this.view.drain(instance);
  }

  instanceRemoved(instance: InstanceId, _now: number): void {
    this.view.remove(instance);
  }

  instanceRoleChanged(instance: InstanceId, role: Role, _now: number): void {
    this.view.setRole(instance, role);
  }

  loadSignal(instance: InstanceId, signal: InstanceLoadSignal, now: number): void {
    this.view.setSignal(instance, signal, now);
  }

  tick(_now: number): void {}

  /** A live migration ended (policies that ask for them, `migrations`): a done one moves the request. */
  migrationEnded(
    id: string,
    _from: InstanceId,
    to: InstanceId,
    outcome: MigrationOutcome,
    now: number,
  ): void {
    if (outcome === 'done') this.moveRequest(id, to, now);
  }

  /** Current in-flight count of an instance, as this policy accounts it (tests, metrics). */
  inflight(instance: InstanceId): number {
    return this.view.inflight(instance);
  }

  /**
   * Disaggregation: count an in-flight request against `to` (its decode instance) instead of where it
   * is; a request no longer in flight is left alone. Then `onMoved`.
   */
  protected moveRequest(id: string, to: InstanceId, now: number): void {
    const from = this.view.move(id, to);
    if (from !== undefined) this.onMoved(id, from, to, now);
  }

  /** After a request was moved from `from` to `to` (disaggregation: prefill to decode instance; a migration). */
  protected onMoved(_id: string, _from: InstanceId, _to: InstanceId, _now: number): void {}

  /** After a request was counted against its instance. */
  protected onRouted(_request: RouteRequest, _decision: RouteDecision<C>, _now: number): void {}

  /** After a request was released; `counts` is undefined when it failed. */
  protected onReleased(
    _id: string,
    _instance: InstanceId,
    _now: number,
    _counts: FinishCounts | undefined,
  ): void {}
}
