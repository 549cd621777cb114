/**
 * Acting on the advice (opt-in, `advice.act`): the gateway starts or drains-then-stops replicas it
 * launched itself (`preble serve --llama-replicas`), never one it did not start. A role's owned count
 * moves toward what the advice implies only when the advice has differed from the fleet for two
 * intervals in a row (one noisy window changes nothing), and stays within [min, max]. Replicas join
 * and leave through the admin API's own code (addReplica, ReplicaSet.drain / remove).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { addReplica, type ReplicaAdding } from '../admin.ts';
import type { DialectName, ReplicaRole } from '../config.ts';
import type { Replica } from '../replicas.ts';
import type { ActRecord, Advice } from './advisor.ts';

/** A replica process the gateway started. */
export interface LaunchedReplica {
  readonly url: string;
  /** Stop its process (by PID); resolves once it is gone. */
  stop(): Promise<void>;
}

/** Starts replicas of one kind (llama.cpp in `preble serve`; a test double in tests). */
export interface ReplicaLauncher {
  readonly dialect: DialectName;
  /** Roles it can start replicas of. */
  readonly roles: readonly ReplicaRole[];
  start(role: ReplicaRole): Promise<LaunchedReplica>;
}

export interface FleetActorOptions {
  readonly launcher: ReplicaLauncher;
  readonly admin: ReplicaAdding;
  readonly min: number;
  readonly max: number;
  /** Real milliseconds between looks at a draining replica's in-flight count (default 50). */
  readonly drainPollMs?: number;
  /** Longest real wait for a drain before stopping anyway (default 30 s; the gateway's drain seconds). */
  readonly drainTimeoutMs?: number;
}

interface Owned {
  readonly replica: Replica;
  readonly handle: LaunchedReplica;
}

export class FleetActor {
  private readonly owned: Owned[] = [];
  private readonly differing = new Map<ReplicaRole, number>();
  /** The act under way, which stopAll waits for. */
  private acting: Promise<unknown> | undefined;
  /**
   * Closing: set by beginClose as the gateway's close begins; nothing starts or joins after it, but a
   * retiring replica's drain goes on (its in-flight requests finish). Closed: set by stopAll, once the
   * gateway has drained; drain waits end.
   */
  private closing = false;
  private closed = false;

  constructor(private readonly options: FleetActorOptions) {}

  /** Replicas this gateway started and still runs. */
  get ownedReplicas(): readonly Replica[] {
    return this.owned.map((o) => o.replica);
  }

  /** Add a launched replica to the fleet as one of ours (refused, and the replica stopped, once closing). */
  async adopt(role: ReplicaRole, handle: LaunchedReplica): Promise<Replica> {
    if (this.closing) {
      await handle.stop();
      throw new Error(`cannot add ${handle.url}: the gateway is closing`);
    }
    const added = await addReplica(this.options.admin, {
      url: handle.url,
      dialect: this.options.launcher.dialect,
      role,
    });
    if (!added.ok) {
      await handle.stop();
      throw new Error(`cannot add ${handle.url}: ${added.message}`);
    }
    this.owned.push({ replica: added.replica, handle });
    return added.replica;
  }

  /** The owned count of `role` the advice implies, within [min, max]. */
  target(role: ReplicaRole, recommended: number): number {
    const present = this.options.admin.replicas
      .present()
      .filter((r) => r.role === role && !r.draining).length;
    const owned = this.ownedOf(role).length;
    return Math.min(this.options.max, Math.max(this.options.min, owned + recommended - present));
  }

  async act(advice: Advice): Promise<ActRecord> {
    if (this.closing) return { started: 0, stopped: 0, note: 'the gateway is closing' };
    const acting = this.actOn(advice);
    this.acting = acting;
    try {
      return await acting;
    } finally {
      this.acting = undefined;
    }
  }

  private async actOn(advice: Advice): Promise<ActRecord> {
    let started = 0;
    let stopped = 0;
    const notes: string[] = [];
    for (const role of this.options.launcher.roles) {
      if (this.closing) {
        notes.push(`${role}: the gateway is closing, nothing changed`);
        continue;
      }
      const recommended = advice.total[role];
      if (recommended === undefined) {
        // No count to act on (no rate met the SLOs, or nothing finished yet): the streak starts over.
        this.differing.delete(role);
        if (role in advice.total) notes.push(`${role}: the advice gives no replica count, nothing changed`);
        continue;
      }
      const owned = this.ownedOf(role).length;
      const target = this.target(role, recommended);
      if (target === owned) {
        this.differing.delete(role);
        continue;
      }
      const times = (this.differing.get(role) ?? 0) + 1;
      if (times < 2) {
        this.differing.set(role, times);
        notes.push(
          `${role}: advice differs from the fleet (${owned} -> ${target}), waiting one more interval`,
        );
        continue;
      }
      this.differing.delete(role);
      // This role's starts and stops (the record's counts are the whole act's).
      let up = 0;
      let down = 0;
      try {
        for (let i = owned; i < target && !this.closing; i++) {
          // adopt stops a replica whose start ended after closing began, and throws.
          await this.adopt(role, await this.options.launcher.start(role));
          up++;
        }
      } catch (error) {
        // Closing began during a start: adopt stopped that replica, and the note below says so.
        if (!this.closing) {
          // One line for GET /admin/advice (a failed llama-server start ends with its output); the
          // next intervals try again.
          const reason = (error instanceof Error ? error.message : String(error)).split('\n')[0];
          notes.push(`${role}: could not start a replica (${up} started): ${reason}`);
          started += up;
          continue;
        }
      }
      started += up;
      // Newest first: the replicas started last leave first.
      for (const o of this.ownedOf(role).slice(target).reverse()) {
        if (this.closing || !(await this.retire(o))) break;
        down++;
      }
      stopped += down;
      const reached = owned + up - down;
      notes.push(
        reached === target
          ? `${role}: ${owned} -> ${target} owned replicas`
          : `${role}: ${owned} -> ${reached} owned replicas, not ${target}: the gateway is closing`,
      );
    }
    return { started, stopped, note: notes.join('; ') || 'fleet matches the advice' };
  }

  /**
   * The gateway's close has begun (called synchronously at its top): no replica starts or joins from
   * now on, and an act under way stops starting; drains under way go on until stopAll.
   */
  beginClose(): void {
    this.closing = true;
  }

  /** Stop every owned replica (shutdown, after the gateway drained): once the act under way ends. */
  async stopAll(): Promise<void> {
    this.closing = true;
    this.closed = true;
    await this.acting?.catch(() => {});
    await Promise.all(this.owned.map((o) => o.handle.stop()));
    this.owned.length = 0;
  }

  private ownedOf(role: ReplicaRole): Owned[] {
    return this.owned.filter((o) => o.replica.role === role && !o.replica.removed);
  }

  /**
   * Drain, remove and stop one owned replica. False when the gateway began closing meanwhile: it is
   * left drained and owned, for stopAll to stop once the gateway has drained (replicas.close closes its
   * pool; a remove() now would race that).
   */
  private async retire(o: Owned): Promise<boolean> {
    const { replicas } = this.options.admin;
    replicas.drain(o.replica, true);
    const deadline = Date.now() + (this.options.drainTimeoutMs ?? 30_000);
    // Closing does not end the wait (these requests are the gateway's to drain too); stopAll does.
    while (o.replica.inflight > 0 && Date.now() < deadline && !this.closed)
      await sleep(this.options.drainPollMs ?? 50);
    if (this.closing) return false;
    // Past the deadline the process goes first: what is still in flight ends as on a crash, rather
    // than holding up remove(), whose pool close waits for every request (and with it every advice).
    const cut = o.replica.inflight > 0;
    if (cut) await o.handle.stop();
    try {
      await replicas.remove(o.replica);
    } catch (error) {
      // Closing began while its pool closed, and replicas.close destroyed it: nothing is lost.
      if (!this.closing) throw error;
    }
    if (!cut) await o.handle.stop();
    this.owned.splice(this.owned.indexOf(o), 1);
    return true;
  }
}
