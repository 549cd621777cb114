import type { Engine } from '../engine/engine.ts';
import type { Iteration } from '../engine/types.ts';

/** What the face is told about one engine's iterations; both calls carry engine seconds. */
export interface IterationHooks {
  /**
   * The iteration began at `start`: requests it admitted stopped queueing then, so the faces tell
   * their admissions now (the simulator's policy, the emulator's listeners).
   */
  began(iteration: Iteration, start: number): void;
  /** It ended at `end`: its tokens, finishes and (made at `start`) evictions are delivered now. */
  ended(iteration: Iteration, start: number, end: number): void;
}

/**
 * The clock a runner runs on: `now` is the engine time, and `afterIteration` arranges for
 * `runner.finishIteration(end)` to be called once `duration` engine seconds have passed (an event
 * in the simulator's queue, a timer in the emulator). Returns a way to cancel it.
 */
export interface RunnerClock {
  now(): number;
  afterIteration(runner: InstanceRunner, start: number, duration: number): { cancel(): void };
}

/**
 * One engine run the way every face runs it, written once: an idle engine with work starts an
 * iteration at once; the iteration's admissions are told when it begins, everything else when it
 * ends; then the next iteration starts if there is work. Only the clock differs between the
 * simulator (virtual time) and `preble engine` (wall time, scaled).
 */
export class InstanceRunner {
  private current: { iteration: Iteration; start: number; pending: { cancel(): void } } | undefined;
  private stopped = false;

  constructor(
    readonly engine: Engine,
    private readonly clock: RunnerClock,
    private readonly hooks: IterationHooks,
  ) {}

  /** An iteration is under way. */
  get busy(): boolean {
    return this.current !== undefined;
  }

  /** Start the next iteration now if the engine is idle and has work (after a submit, say). */
  kick(): void {
    if (this.current !== undefined || this.stopped || !this.engine.hasWork()) return;
    const start = this.clock.now();
    const iteration = this.engine.step(start);
    this.current = { iteration, start, pending: { cancel() {} } };
    this.hooks.began(iteration, start);
    const pending = this.clock.afterIteration(this, start, iteration.duration);
    if (this.current !== undefined) this.current.pending = pending;
  }

  /** The clock's callback: the iteration under way ended at `end`. */
  finishIteration(end: number): void {
    const current = this.current;
    if (current === undefined) return;
    this.current = undefined;
    this.hooks.ended(current.iteration, current.start, end);
    this.kick();
  }

  /** No more iterations; one under way is dropped with its events. */
  stop(): void {
    this.stopped = true;
    this.current?.pending.cancel();
    this.current = undefined;
  }
}
