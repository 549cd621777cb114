/**
 * The live advisor: keeps the traffic window and, at each tick (the gateway's Periodic on the
 * policy's clock), turns it into the fleet the planner recommends per model and role. Capacities
 * come from the search's capacity function, on its worker pool (one thread, one evaluation at a
 * time: Periodic never overlaps a round), cached by task so that a steady workload is measured once.
 */

import type { FinishCounts } from '../../core/types.ts';
import { type CapacityCache, taskHash } from '../../search/cache.ts';
import type { Capacity } from '../../search/capacity.ts';
import { evaluateTasks } from '../../search/pool.ts';
import type { CapacityTask } from '../../search/task.ts';
import type { ReplicaRole } from '../config.ts';
import type { GatewayMetrics } from '../metrics.ts';
import type { AdviceConfig } from './config.ts';
import {
  type AdviceQuestion,
  decodeTask,
  feedersFor,
  questionRoles,
  type RoleTask,
  replicasFor,
  roleTasks,
} from './recommend.ts';
import { type Observed, type ObservedTraffic, TrafficWindow } from './window.ts';
import { observedWorkload } from './workload.ts';

/** Capacities of tasks, in their order. */
export type Evaluator = (tasks: readonly CapacityTask[]) => Promise<readonly Capacity[]>;

export interface RoleAdvice {
  readonly role: ReplicaRole;
  /** Undefined when no rate passed (the SLOs are out of one replica's reach for this workload). */
  readonly replicas: number | undefined;
  readonly capacityRps: number;
  /** False when the search never found a failing rate: the capacity is then a lower bound. */
  readonly bracketed: boolean;
  readonly how: string;
  readonly probes: number;
  /** A decode replica's: the prefill replicas that fed it (`feedersFor`); absent when none could. */
  readonly feeders?: number;
}

export interface ModelAdvice extends ObservedTraffic {
  /** The workload the capacity was measured on; undefined before a request finished. */
  readonly workload: string | undefined;
  readonly roles: readonly RoleAdvice[];
}

/** What the fleet actor did with an advice (actor.ts). */
export interface ActRecord {
  readonly started: number;
  readonly stopped: number;
  readonly note: string;
}

export interface Advice extends Omit<Observed, 'models'> {
  readonly models: readonly ModelAdvice[];
  /**
   * Replicas per role over every model: 0 without traffic; undefined for a role no rate passed, or
   * while a model with arrivals has no finished request (its lengths are not known yet).
   */
  readonly total: Readonly<Partial<Record<ReplicaRole, number | undefined>>>;
  readonly headroom: number;
  readonly evaluationSeconds: number;
  /** Wall-clock time of the advice (`at` is the policy's clock). */
  readonly time: string;
  /** What the actor did with it; null when acting is off. */
  acted: ActRecord | null;
}

export interface AdvisorOptions {
  readonly config: AdviceConfig;
  readonly question: Omit<AdviceQuestion, 'slo' | 'target'>;
  /** The policy's clock (gateway seconds). */
  readonly now: () => number;
  /** Default: the search's pool on one thread, with an in-memory cache. */
  readonly evaluate?: Evaluator;
  readonly metrics?: GatewayMetrics;
  /** Called with each advice when acting is on (actor.ts); what it returns is recorded. */
  readonly act?: (advice: Advice) => Promise<ActRecord | undefined>;
}

/** A capacity cache in memory, keyed as the search's disk cache is. */
export function memoryCache(): CapacityCache {
  const entries = new Map<string, Capacity>();
  return {
    get: (task) => entries.get(taskHash(task)),
    set: (task, capacity) => void entries.set(taskHash(task), capacity),
  };
}

/** The search's pool with one thread, so advice never takes every core from the gateway. */
export function poolEvaluator(cache: CapacityCache = memoryCache(), threads = 1): Evaluator {
  return async (tasks) => (await evaluateTasks(tasks, { cache, threads })).capacities;
}

export class Advisor {
  readonly window: TrafficWindow;
  private current: Advice | undefined;
  private readonly evaluate: Evaluator;
  private readonly question: AdviceQuestion;

  constructor(private readonly options: AdvisorOptions) {
    const { config } = options;
    this.window = new TrafficWindow(config.windowSeconds, options.now());
    this.evaluate = options.evaluate ?? poolEvaluator();
    this.question = { ...options.question, slo: config.slo, target: config.target };
  }

  /** The latest advice; undefined before the first tick. */
  get latest(): Advice | undefined {
    return this.current;
  }

  arrived(model: string, at: number): void {
    this.window.arrived(model, at);
  }

  finished(model: string, counts: FinishCounts, at: number): void {
    this.window.finished(model, counts, at);
  }

  /**
   * The advice per role for one model's workload and rate. A disaggregated fleet's decode question
   * waits for the prefill capacity: it sizes the decode replica's feeders and caps its search.
   */
  private async roles(workload: string, rate: number): Promise<RoleAdvice[]> {
    const { headroom } = this.options.config;
    const advise = (
      asked: Pick<RoleTask, 'role' | 'how'>,
      capacity: Capacity,
      feeders?: number,
    ): RoleAdvice => ({
      role: asked.role,
      replicas: replicasFor(rate, headroom, capacity.rps),
      capacityRps: capacity.rps,
      bracketed: capacity.bracketed,
      how: asked.how,
      probes: capacity.probes.length,
      ...(feeders === undefined ? {} : { feeders }),
    });
    const first = roleTasks(this.question, workload);
    const capacities = await this.evaluate(first.map((a) => a.task));
    const roles = first.map((a, i) => advise(a, capacities[i]!));
    if (!this.question.disaggregated) return roles;
    const prefill = capacities[0]!.rps;
    const feeders = feedersFor(rate, headroom, prefill);
    if (feeders === undefined) {
      // No prefill rate passed: nothing can feed a decode replica, so its count is unknown too.
      const how = 'not measured: no rate passed for one prefill replica, so none can feed a decode replica';
      return [...roles, advise({ role: 'decode', how }, { rps: 0, bracketed: true, probes: [] })];
    }
    const decode = decodeTask(this.question, workload, feeders, prefill);
    const [capacity] = await this.evaluate([decode.task]);
    return [...roles, advise(decode, capacity!, feeders)];
  }

  /** Compute the advice for the window ending now, publish it, and act on it when asked to. */
  async tick(): Promise<Advice> {
    const { now, config, metrics } = this.options;
    const observed = this.window.observe(now());
    const started = performance.now();
    const models: ModelAdvice[] = [];
    for (const traffic of observed.models) {
      const workload = observedWorkload(traffic);
      if (workload === undefined) {
        models.push({ ...traffic, workload, roles: [] });
        continue;
      }
      const roles = await this.roles(workload, traffic.rate);
      models.push({ ...traffic, workload, roles });
    }
    // No traffic in the window asks for no replica (the actor then scales down to its min); a model
    // whose lengths are not known yet (nothing finished) leaves the totals unknown.
    const total: Partial<Record<ReplicaRole, number | undefined>> = {};
    for (const role of questionRoles(this.question)) total[role] = 0;
    for (const m of models) {
      if (m.workload === undefined) for (const role of questionRoles(this.question)) total[role] = undefined;
      for (const r of m.roles) {
        const sum = total[r.role];
        total[r.role] = sum === undefined || r.replicas === undefined ? undefined : sum + r.replicas;
      }
    }
    const advice: Advice = {
      at: observed.at,
      spanSeconds: observed.spanSeconds,
      models,
      total,
      headroom: config.headroom,
      evaluationSeconds: (performance.now() - started) / 1000,
      time: new Date().toISOString(),
      acted: null,
    };
    if (metrics !== undefined) publish(metrics, advice);
    if (config.act && this.options.act !== undefined) {
      advice.acted = (await this.options.act(advice)) ?? null;
    }
    this.current = advice;
    return advice;
  }
}

function publish(metrics: GatewayMetrics, advice: Advice): void {
  metrics.adviceReplicas.reset();
  metrics.adviceArrivalRate.reset();
  metrics.adviceCapacity.reset();
  for (const m of advice.models) {
    metrics.adviceArrivalRate.set({ model: m.model }, m.rate);
    for (const r of m.roles) {
      metrics.adviceCapacity.set({ model: m.model, role: r.role }, r.capacityRps);
      if (r.replicas !== undefined) metrics.adviceReplicas.set({ model: m.model, role: r.role }, r.replicas);
    }
  }
}
