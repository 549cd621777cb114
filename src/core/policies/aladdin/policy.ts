/**
 * Aladdin (seed 004; ../shared/research/seed-aladdin-splitwise-tetriinfer.md): SLO-aware best-fit
 * placement. Each request goes to the most loaded worker (largest capacity norm, Algorithm 1) on which
 * it still meets the constraints of Aladdin's placement problem: (b) ATGT through Eq. 4's context
 * limit with the γ and θ knobs, (c) TTFT for the prompts not yet started, (d) the new prefill within
 * the decode slack of the running requests, (e) KV per future iteration within the worker's memory.
 * The performance models (Eq. 1-3) start from the cost model's profile and are refit from finished
 * requests (model.ts). Output lengths: the run's predictor when it has one (`RouteRequest.predictedOutputTokens`),
 * else Aladdin's own, core/length's `history` (the mean output per input-length bucket), capped by max_tokens.
 *
 * When no worker fits, Aladdin opens a new one. A policy cannot start hardware, so the request is
 * packed into a virtual worker (best fit again among the virtual ones, else a new one) and runs on the
 * least loaded real worker meanwhile (branch `overflow`); `workersWanted` (the real workers in use
 * plus the virtual ones open) is what a Provisioner reads to add workers (src/core/provisioning).
 *
 * On a fleet with prefill and decode instances (split phase, §4.4): prefills are placed by (c) alone
 * (prefill workers have no decode to protect) and decodes, when the KV is ready, by (b) and (e).
 *
 * Re-balancing (Algorithm 2, rebalance.ts): at each tick a decoding request that outran its prediction
 * is re-predicted (the predictor's `repredict`: history doubles it, where the paper takes the mean output
 * of the requests of that input length that ran longer; ours needs no per-length tail), which adds to its
 * worker's error (l_e, b_e), as a request that finished before its prediction subtracts; then, colocated,
 * requests placed but not started move from over- to under-utilized workers where they still meet
 * (b)-(e), as queued moves (`migrations`, `MigrationRequest.queued`: the simulator carries them out; a
 * gateway cannot, a routed request is its replica's).
 */
import { NoInstanceAvailableError } from '../../cluster-view.ts';
import type { CostModel } from '../../cost-model/types.ts';
import { createHistoryPredictor, historyDefaults } from '../../length/history.ts';
import type { LengthPredictor, LengthQuery } from '../../length/types.ts';
import { prefillSeconds } from '../../provisioning/fits.ts';
import type {
  FinishCounts,
  InstanceId,
  InstanceLoadSignal,
  MigrationRequest,
  RouteDecision,
  RouteRequest,
  Tokens,
} from '../../types.ts';
import { withDefaults } from '../../with-defaults.ts';
import { NO_COSTS } from '../base-policy.ts';
import { DecodeAtKvReadyPolicy } from '../support/decode-at-kv-ready.ts';
import { hasRoles, withRole } from '../support/roles.ts';
import {
  capacityNorm,
  fits,
  generatedEstimate,
  type Job,
  type Knobs,
  stepSeconds,
  type WorkerKind,
} from './feasibility.ts';
import { AladdinModel } from './model.ts';
import { type AladdinOptions, aladdinDefaults, checkAladdinOptions, FALLBACK_SLO } from './options.ts';
import { errorLine, type Movable, rebalance, type WorkerError } from './rebalance.ts';

export interface AladdinContext {
  readonly costModel: CostModel;
  /** The run's SLO, when it has one (`--slo-ttft/--slo-tpot`); the TPOT target is read as ATGT. */
  readonly slo?: { readonly ttft: number; readonly tpot: number };
  /** Its own output-length predictor; default: `history` (core/length) with `defaultOutputTokens` as its prior. */
  readonly predictor?: LengthPredictor;
}

/** A request's decode shape when its decode began: its worker's batch size and mean context (Eq. 3's sample). */
interface DecodeStart {
  readonly at: number;
  readonly batch: number;
  readonly meanContext: number;
}

export class AladdinPolicy extends DecodeAtKvReadyPolicy {
  readonly name = 'aladdin';
  readonly branches = ['best-fit', 'overflow', 'prefill-best-fit', 'prefill-overflow'] as const;
  private readonly o: Required<AladdinOptions>;
  private readonly knobs: Knobs;
  private readonly model: AladdinModel;
  private readonly predictor: LengthPredictor;
  private readonly slo: { readonly ttft: number; readonly atgt: number };
  private readonly jobs = new Map<string, Job>();
  /** Jobs counted on each worker (where the ClusterView counts them). */
  private readonly on = new Map<InstanceId, Job[]>();
  /** The workers best fit opened and the fleet did not have yet, with the jobs packed into each. */
  private readonly virtual: Job[][] = [];
  private readonly decodeStarts = new Map<string, DecodeStart>();
  /** Algorithm 2: each worker's prediction error found since the last re-balancing, and the moves asked. */
  private readonly errors = new Map<InstanceId, WorkerError>();
  private moves: MigrationRequest[] = [];

  constructor(options: AladdinOptions, context: AladdinContext) {
    super();
    this.o = withDefaults(aladdinDefaults, options);
    checkAladdinOptions(this.o);
    this.knobs = { gamma: this.o.gamma, theta: this.o.theta };
    this.model = new AladdinModel(context.costModel, this.o.refit);
    this.predictor =
      context.predictor ?? createHistoryPredictor({ ...historyDefaults, prior: this.o.defaultOutputTokens });
    this.slo = {
      ttft: this.o.ttft || context.slo?.ttft || FALLBACK_SLO.ttft,
      atgt: this.o.atgt || context.slo?.tpot || FALLBACK_SLO.tpot,
    };
  }

  protected choose(request: RouteRequest, now: number, active: readonly InstanceId[]): RouteDecision {
    const lin = request.tokens.length;
    // The run's prediction when it runs a predictor (the simulator's `--predictor`), else our own.
    const predicted = Math.max(
      1,
      Math.round(request.predictedOutputTokens ?? this.predictor.predict(query(request.id, lin), now).tokens),
    );
    const job: Job = {
      id: request.id,
      inputTokens: lin,
      predicted:
        request.outputLenHint === undefined
          ? predicted
          : Math.min(predicted, Math.max(1, request.outputLenHint)),
      arrival: request.arrival,
      ttft: request.slo?.ttft ?? this.slo.ttft,
      atgt: request.slo?.tpot ?? this.slo.atgt,
      stolen: 0,
    };
    this.jobs.set(job.id, job);
    if (!this.split()) {
      const { instance, fitted } = this.place(job, active, 'mixed', now);
      return { instance, branch: fitted ? 'best-fit' : 'overflow', matchedTokens: 0, costs: NO_COSTS };
    }
    const prefill = withRole(this.view, active, 'prefill');
    if (prefill.length === 0) {
      this.jobs.delete(job.id);
      throw new NoInstanceAvailableError();
    }
    const { instance, fitted } = this.place(job, prefill, 'prefill', now);
    return {
      instance,
      branch: fitted ? 'prefill-best-fit' : 'prefill-overflow',
      matchedTokens: 0,
      costs: NO_COSTS,
      decode: 'at-kv-ready',
    };
  }

  protected chooseDecode(
    id: string,
    _prefillInstance: InstanceId,
    _kvTokens: number,
    now: number,
  ): InstanceId {
    const decode = withRole(this.view, this.view.active, 'decode');
    if (decode.length === 0) throw new NoInstanceAvailableError();
    const job = this.jobs.get(id);
    if (job === undefined) return decode[0]!;
    const { instance } = this.place(job, decode, 'decode', now);
    this.moveRequest(id, instance, now);
    return instance;
  }

  kvReady(_id: string, _prefillInstance: InstanceId, _path: Tokens, _now: number): void {}

  kvArrived(id: string, decodeInstance: InstanceId, _path: Tokens, now: number): void {
    const job = this.jobs.get(id);
    if (job !== undefined) this.noteDecodeStart(job, decodeInstance, now);
  }

  /** Workers the placement uses now: the provisioned role's workers holding requests, plus the virtual ones. */
  workersWanted(_now: number): number {
    const role = this.split() ? 'decode' : 'mixed';
    let used = 0;
    for (const id of this.view.active)
      if (this.roleOf(id) === role && (this.on.get(id)?.length ?? 0) > 0) used++;
    return used + this.virtual.length;
  }

  override requestStarted(id: string, now: number): void {
    const job = this.jobs.get(id);
    if (job !== undefined && job.startedAt === undefined) job.startedAt = now;
  }

  override requestFirstToken(id: string, now: number): void {
    const job = this.jobs.get(id);
    if (job === undefined) return;
    job.firstTokenAt = now;
    const at = this.view.instanceOf(id);
    if (!this.split() && at !== undefined) this.noteDecodeStart(job, at, now);
  }

  override loadSignal(instance: InstanceId, signal: InstanceLoadSignal, now: number): void {
    super.loadSignal(instance, signal, now);
    const jobs = this.on.get(instance);
    if (jobs === undefined || jobs.length === 0 || signal.waiting > 0) return;
    // Every request there runs: the KV it holds against the context we believe (Eq. 1's sample).
    const step = stepSeconds(this.model.current(), jobs, now);
    let tokens = 0;
    for (const j of jobs) tokens += j.inputTokens + generatedEstimate(j, now, step);
    this.model.kv.add({ tokens, kv: signal.usedKvTokens });
  }

  /**
   * Algorithm 2: a decoding request past its prediction gets the conditional one (its worker's error
   * grows), then, colocated, the re-balancing of requests not started.
   */
  override tick(now: number): void {
    const fitted = this.model.current();
    for (const [instance, jobs] of this.on) {
      if (jobs.length === 0) continue;
      const step = stepSeconds(fitted, jobs, now);
      for (const j of jobs) {
        if (j.firstTokenAt === undefined || step <= 0) continue;
        const ran = Math.floor((now - j.firstTokenAt) / step) + 1;
        if (ran < j.predicted) continue;
        const before = j.predicted;
        j.predicted = this.predictor.repredict(query(j.id, j.inputTokens), ran, { tokens: before }).tokens;
        this.addError(instance, this.o.gamma * (j.predicted - before), 1);
      }
    }
    // Moves not taken by now are stale (a gateway never takes them: a routed request is its replica's).
    this.moves = [];
    if (this.o.rebalance && !this.split()) this.rebalance(now);
    this.errors.clear();
  }

  /** The queued moves Algorithm 2 asked for (taken). */
  migrations(_now: number): readonly MigrationRequest[] {
    const out = this.moves;
    this.moves = [];
    return out;
  }

  protected override onRouted(request: RouteRequest, decision: RouteDecision, _now: number): void {
    const job = this.jobs.get(request.id);
    if (job === undefined) return;
    this.attach(job, decision.instance);
  }

  protected override onMoved(id: string, from: InstanceId, to: InstanceId, _now: number): void {
    const job = this.jobs.get(id);
    if (job === undefined) return;
    // A request moved before its prefill gives the slack it spent on `from` back (it prefills on `to`),
    // and joins `to`'s queue last: no prefill follows it there yet, so it keeps none of `from`'s charges.
    if (job.startedAt === undefined) {
      this.refund(job, from);
      job.stolen = 0;
    }
    this.detach(job, from);
    this.attach(job, to);
  }

  protected override onReleased(
    id: string,
    instance: InstanceId,
    now: number,
    counts: FinishCounts | undefined,
  ): void {
    const job = this.jobs.get(id);
    if (job === undefined) return;
    this.jobs.delete(id);
    this.detach(job, instance);
    this.unpackVirtual(job);
    const start = this.decodeStarts.get(id);
    this.decodeStarts.delete(id);
    if (counts === undefined) return;
    // Finished before its prediction: its worker holds less than planned (Algorithm 2's b_e - 1).
    if (counts.outputTokens < job.predicted)
      this.addError(instance, this.o.gamma * (counts.outputTokens - job.predicted), -1);
    this.predictor.observe?.(query(id, job.inputTokens), counts.outputTokens, now);
    const uncached = counts.promptTokens - counts.cachedTokens;
    if (job.startedAt !== undefined && job.firstTokenAt !== undefined && uncached > 0)
      this.model.prefill.add({ inputTokens: uncached, seconds: job.firstTokenAt - job.startedAt });
    if (start !== undefined && start.batch > 1 && counts.outputTokens > 1)
      this.model.decode.add({
        batch: start.batch,
        meanContext: start.meanContext,
        seconds: (now - start.at) / (counts.outputTokens - 1),
      });
  }

  /** Best fit among `candidates` (Algorithm 1); none fitting: a virtual worker, and the least loaded real one. */
  private place(
    job: Job,
    candidates: readonly InstanceId[],
    kind: WorkerKind,
    now: number,
  ): { instance: InstanceId; fitted: boolean } {
    const fitted = this.model.current();
    const norms = candidates.map((id) => ({ id, norm: capacityNorm(this.on.get(id) ?? [], this.o.gamma) }));
    norms.sort((a, b) => b.norm - a.norm || a.id - b.id);
    for (const { id } of norms)
      if (fits(fitted, kind, this.on.get(id) ?? [], job, now, this.capacity(id), this.knobs))
        return { instance: id, fitted: true };
    const least = norms[norms.length - 1]!.id;
    if (kind !== 'prefill') this.packVirtual(job, now, this.capacity(least));
    return { instance: least, fitted: false };
  }

  /**
   * Open workers best fit asked for: the job goes into the fullest virtual worker it fits, else a new
   * one. A virtual worker is judged as a decode worker, by (b) and (e): a fresh worker has no queue, so
   * the TTFT its jobs lose waiting elsewhere meanwhile is not its own.
   */
  private packVirtual(job: Job, now: number, capacity: number): void {
    const fitted = this.model.current();
    let best: Job[] | undefined;
    for (const v of this.virtual)
      if (
        fits(fitted, 'decode', v, job, now, capacity, this.knobs) &&
        (best === undefined || capacityNorm(v, this.o.gamma) > capacityNorm(best, this.o.gamma))
      )
        best = v;
    if (best === undefined) this.virtual.push([job]);
    else best.push(job);
  }

  private unpackVirtual(job: Job): void {
    for (let v = 0; v < this.virtual.length; v++) {
      const at = this.virtual[v]!.indexOf(job);
      if (at < 0) continue;
      this.virtual[v]!.splice(at, 1);
      if (this.virtual[v]!.length === 0) this.virtual.splice(v, 1);
      return;
    }
  }

  private attach(job: Job, instance: InstanceId): void {
    let jobs = this.on.get(instance);
    if (jobs === undefined) {
      jobs = [];
      this.on.set(instance, jobs);
    }
    // Colocated, a new prefill preempts the decodes there: it spends the slack of every request placed
    // before it (constraint (d)), whether it decodes already or will when its own prefill is done.
    if (this.roleOf(instance) === 'mixed') {
      const cost = prefillSeconds(this.model.current().prefill, job.inputTokens);
      for (const j of jobs) j.stolen += cost;
    }
    jobs.push(job);
  }

  /** Algorithm 2's step 5 on the mixed workers: move requests not started, within (b)-(e) where they go. */
  private rebalance(now: number): void {
    if (this.errors.size === 0) return;
    const fitted = this.model.current();
    const workers = withRole(this.view, this.view.active, 'mixed');
    const errors = workers.map((instance) => this.errors.get(instance) ?? { instance, le: 0, be: 0 });
    const movable: Movable[] = [];
    for (const instance of workers)
      for (const j of this.on.get(instance) ?? [])
        if (j.startedAt === undefined)
          movable.push({ id: j.id, instance, tokens: j.inputTokens + this.o.gamma * j.predicted });
    // Workers as they will be after this round's moves so far, as copies: a move leaves its source and
    // joins the tail of its destination, its prefill charged to the slack of the requests ahead of it
    // there ((d), as `attach` will charge it once the move is made; the source's refund is left out).
    const planned = new Map<InstanceId, Job[]>();
    const line = errorLine(fitted.decode.k2, fitted.decode.c2, this.o.theta);
    const onTo = (to: InstanceId) => planned.get(to) ?? this.on.get(to) ?? [];
    const moved = (r: Movable, to: InstanceId) => {
      const job = this.jobs.get(r.id)!;
      const cost = prefillSeconds(fitted.prefill, job.inputTokens);
      planned.set(
        r.instance,
        onTo(r.instance).filter((j) => j.id !== r.id),
      );
      planned.set(to, [...onTo(to).map((j) => ({ ...j, stolen: j.stolen + cost })), { ...job, stolen: 0 }]);
    };
    const moves = rebalance(
      line,
      errors,
      movable,
      (r, to) => fits(fitted, 'mixed', onTo(to), this.jobs.get(r.id)!, now, this.capacity(to), this.knobs),
      moved,
    );
    for (const m of moves) this.moves.push({ ...m, queued: true });
  }

  private addError(instance: InstanceId, le: number, be: number): void {
    if (this.roleOf(instance) !== 'mixed') return;
    const e = this.errors.get(instance);
    if (e === undefined) this.errors.set(instance, { instance, le, be });
    else {
      e.le += le;
      e.be += be;
    }
  }

  /** The slack `job`'s prefill was charged on `instance`, back to the requests placed before it. */
  private refund(job: Job, instance: InstanceId): void {
    const jobs = this.on.get(instance) ?? [];
    const at = jobs.indexOf(job);
    const cost = prefillSeconds(this.model.current().prefill, job.inputTokens);
    for (let i = 0; i < at; i++) jobs[i]!.stolen = Math.max(0, jobs[i]!.stolen - cost);
  }

  private detach(job: Job, instance: InstanceId): void {
    const jobs = this.on.get(instance);
    const at = jobs?.indexOf(job) ?? -1;
    if (at >= 0) jobs!.splice(at, 1);
  }

  private noteDecodeStart(job: Job, instance: InstanceId, now: number): void {
    const jobs = this.on.get(instance) ?? [];
    const step = stepSeconds(this.model.current(), jobs, now);
    let context = 0;
    for (const j of jobs) context += j.inputTokens + generatedEstimate(j, now, step);
    this.decodeStarts.set(job.id, {
      at: now,
      batch: jobs.length,
      meanContext: jobs.length > 0 ? context / jobs.length : job.inputTokens,
    });
  }

  private capacity(id: InstanceId): number {
    return this.view.state(id)?.info.kvCapacityTokens ?? Number.POSITIVE_INFINITY;
  }

  private roleOf(id: InstanceId): 'mixed' | 'prefill' | 'decode' {
    return this.view.state(id)?.info.role ?? 'mixed';
  }

  /** Split phase: the fleet has prefill or decode instances. */
  private split(): boolean {
    return hasRoles(this.view);
  }
}

/** What the length predictor is told of a request: its prompt's length (Aladdin's predictor reads no more). */
function query(id: string, promptTokens: number): LengthQuery {
  return { id, promptTokens };
}
