import type { Tokens } from '../core/types.ts';
import type { Engine } from '../engine/engine.ts';
import type { AdoptedKv, EngineEviction, EngineFinish, EngineKvReady } from '../engine/types.ts';
import { InstanceRunner } from '../runtime/instance-runner.ts';

/** What a request's owner hears as the engine runs it. */
export interface RequestListener {
  /** The request was admitted; `cachedTokens` prompt tokens were found in the prefix cache. */
  onStart?(cachedTokens: number): void;
  /**
   * One generated token, with its 0-based index among the request's output; the first one comes with
   * the request's queueing and prefill times.
   */
  onToken?(index: number, first?: FirstTokenTiming): void;
  /** All tokens produced (always after the last `onToken`). */
  onFinish?(finish: EngineFinish): void;
  /**
   * A prefill-only request (prefill-role engine) ended its leg: its first token was told, its KV is
   * held by the engine until `releaseKv` (or `abort`). The request leaves the driver: nothing more is told.
   */
  onKvReady?(kv: EngineKvReady): void;
}

/** When a request's first token came: wall-clock seconds (engine seconds / time scale). */
export interface FirstTokenTiming {
  /** Submission to admission into a batch. */
  readonly queueSeconds: number;
  /** Admission into a batch to the first token. */
  readonly prefillSeconds: number;
}

/** A finished request's timings in engine seconds (vLLM's breakdown) and sizes. */
export interface FinishedTimings {
  /** Submission to finish. */
  readonly e2e: number;
  /** Submission to first admission. */
  readonly queue: number;
  /** First admission to first token. */
  readonly prefill: number;
  /** First token to last token. */
  readonly decode: number;
  readonly promptTokens: number;
  readonly generationTokens: number;
}

/** Hears every request's timing points as they happen (metrics); all times in engine seconds. */
export interface RequestObserver {
  /** A request's first token, `seconds` after its submission. */
  firstToken(seconds: number): void;
  /** A later token, `seconds` after the request's previous one. */
  nextToken(seconds: number): void;
  finished(timings: FinishedTimings): void;
  /** A request dropped before finishing (client gone, shutdown). */
  aborted(): void;
}

/** Hears how the engine's prefix cache changes (`preble engine --kv-events`), once per iteration. */
export interface CacheObserver {
  /** A prompt's prefill completed (its first token came): the prompt is cached. */
  stored(tokens: Tokens): void;
  /** The iteration evicted `path[keptTokens..]`. */
  evicted(eviction: EngineEviction): void;
  /** The iteration's changes are complete. */
  flush(): void;
}

export interface DriverOptions {
  /** Engine seconds per wall-clock second: 1000 runs the emulation 1000 times faster. Default 1. */
  readonly timeScale?: number;
  /** Wall clock in seconds (tests may inject one). Default: performance.now() / 1000. */
  readonly clock?: () => number;
  /** Timer (tests may inject one). Default: setTimeout. */
  readonly schedule?: (callback: () => void, delayMs: number) => { cancel(): void };
  /** Told of first tokens, tokens and finishes (metrics). */
  readonly observer?: RequestObserver;
  /** Told of the prefix cache's changes (KV events). */
  readonly cacheObserver?: CacheObserver;
}

interface Pending {
  readonly listener: RequestListener;
  readonly tokens: Tokens;
  /** Adopted (decode leg): nothing is told before an iteration admits it. */
  readonly adopted: boolean;
  delivered: number;
  /** Engine times: submission, first admission, first token, latest token (-1 until they happen). */
  readonly submittedAt: number;
  startedAt: number;
  firstTokenAt: number;
  lastTokenAt: number;
}

function defaultSchedule(callback: () => void, delayMs: number): { cancel(): void } {
  const timer = setTimeout(callback, delayMs);
  return { cancel: () => clearTimeout(timer) };
}

/**
 * Runs one Engine against the wall clock with the runner every face shares (src/runtime): each
 * iteration takes its cost-model duration (divided by the time scale) in real time; its admissions
 * are told when it begins, its tokens and finishes at its end, then the next iteration starts if
 * there is work. Engine time is wall time since creation times the time scale.
 */
export class WallClockDriver {
  readonly engine: Engine;
  readonly timeScale: number;
  private readonly clock: () => number;
  private readonly epoch: number;
  private readonly observer: RequestObserver | undefined;
  private readonly cacheObserver: CacheObserver | undefined;
  private readonly pending = new Map<string, Pending>();
  private readonly runner: InstanceRunner;
  private engineNow = 0;
  private closed = false;

  constructor(engine: Engine, options: DriverOptions = {}) {
    const timeScale = options.timeScale ?? 1;
    if (!(timeScale > 0) || !Number.isFinite(timeScale)) {
      throw new Error(`driver: timeScale must be a positive number, got ${timeScale}`);
    }
    this.engine = engine;
    this.timeScale = timeScale;
    this.clock = options.clock ?? (() => performance.now() / 1000);
    this.observer = options.observer;
    this.cacheObserver = options.cacheObserver;
    this.epoch = this.clock();
    const schedule = options.schedule ?? defaultSchedule;
    this.runner = new InstanceRunner(
      engine,
      {
        now: () => this.now(),
        // An iteration takes its duration in engine time, so duration / timeScale in real time.
        afterIteration: (runner, start, duration) =>
          schedule(
            () => {
              const end = start + duration;
              if (end > this.engineNow) this.engineNow = end;
              runner.finishIteration(end);
            },
            (duration * 1000) / this.timeScale,
          ),
      },
      {
        began: (iteration, start) => this.admitted(iteration.events.started, start),
        ended: (iteration, _start, end) => {
          // Evictions made room for this iteration's work: they are told before what it cached.
          for (const e of iteration.events.evictions) this.cacheObserver?.evicted(e);
          this.deliver(iteration.events.finished, end);
          this.kvReady(iteration.events.kvReady);
          this.cacheObserver?.flush();
        },
      },
    );
  }

  /** Engine time now: never behind the end of the last iteration. */
  now(): number {
    const t = (this.clock() - this.epoch) * this.timeScale;
    if (t > this.engineNow) this.engineNow = t;
    return this.engineNow;
  }

  /** Requests submitted and not yet finished or aborted. */
  get inFlight(): number {
    return this.pending.size;
  }

  /** Enqueue a request; throws (engine's message) when the engine refuses it. `maxTokens`: the client's cap. */
  submit(
    id: string,
    tokens: Tokens,
    outputTokens: number,
    listener: RequestListener,
    maxTokens?: number,
  ): void {
    if (this.closed) throw new Error('driver: closed');
    const now = this.now();
    // The client's max_tokens, which queue policies may see (No-Preempt reserves it); never the planned length.
    this.engine.submit({ id, tokens, outputTokens, ...(maxTokens === undefined ? {} : { maxTokens }) }, now);
    this.pending.set(id, {
      listener,
      tokens,
      adopted: false,
      delivered: 0,
      submittedAt: now,
      startedAt: -1,
      firstTokenAt: -1,
      lastTokenAt: -1,
    });
    this.runner.kick();
  }

  /**
   * Queue a request whose KV arrived from a prefill engine (decode-role engine: `Engine.adopt`). Its
   * listener hears every token from index 0 (the client's answer comes whole from the decode side, as
   * with vLLM's decode leg): the `kv.generated` tokens made by the prefill leg at the end of the first
   * iteration that runs it, then one per iteration.
   */
  adopt(
    id: string,
    tokens: Tokens,
    outputTokens: number,
    kv: AdoptedKv,
    listener: RequestListener,
    maxTokens?: number,
  ): void {
    if (this.closed) throw new Error('driver: closed');
    const now = this.now();
    this.engine.adopt(
      { id, tokens, outputTokens, ...(maxTokens === undefined ? {} : { maxTokens }) },
      kv,
      now,
    );
    this.pending.set(id, {
      listener,
      tokens,
      adopted: true,
      delivered: 0,
      submittedAt: now,
      startedAt: -1,
      firstTokenAt: -1,
      lastTokenAt: -1,
    });
    this.runner.kick();
  }

  /**
   * The KV tokens a request of `tokens` and at most `maxTokens` of output would need here at its peak
   * (its decode, on a decode-role engine), and the engine's capacity: a server's length check at the door.
   */
  kvNeed(tokens: Tokens, maxTokens: number): { need: number; capacity: number } {
    const need = this.engine.kvNeed(
      { id: '(length check)', tokens, outputTokens: maxTokens, maxTokens },
      this.now(),
    );
    return { need, capacity: this.engine.kvCapacityTokens };
  }

  /** Give back the KV a prefill-only request holds (the decode side took it, or nobody will). */
  releaseKv(id: string): boolean {
    return this.engine.releaseKv(id);
  }

  /** Drop a request (client gone); its listener hears nothing more. */
  abort(id: string): boolean {
    const had = this.pending.delete(id);
    const aborted = this.engine.abort(id);
    if (had) this.observer?.aborted();
    return had || aborted;
  }

  /** Stop the clock; pending requests are dropped silently. */
  close(): void {
    this.closed = true;
    this.runner.stop();
    for (const id of [...this.pending.keys()]) this.abort(id);
  }

  /** The requests an iteration admits stopped queueing when it began. */
  private admitted(started: readonly { id: string; cachedTokens: number }[], start: number): void {
    for (const s of started) {
      const p = this.pending.get(s.id);
      if (p === undefined) continue;
      p.startedAt = start;
      p.listener.onStart?.(s.cachedTokens);
    }
  }

  /** Prefill legs that ended: their KV is held; their listeners hear it and they leave the driver. */
  private kvReady(ready: readonly EngineKvReady[]): void {
    for (const kv of ready) {
      const p = this.pending.get(kv.id);
      if (p === undefined) continue;
      this.pending.delete(kv.id);
      p.listener.onKvReady?.(kv);
    }
  }

  /** Hand an iteration's tokens and finishes (which happened at `end`) to the listeners. */
  private deliver(finished: readonly EngineFinish[], end: number): void {
    const done = new Map<string, EngineFinish>();
    for (const f of finished) done.set(f.id, f);
    const observer = this.observer;
    for (const [id, p] of this.pending) {
      if (p.adopted && p.startedAt < 0) continue;
      const finish = done.get(id);
      const generated =
        finish !== undefined ? finish.outputTokens : (this.engine.request(id)?.generated ?? 0);
      while (p.delivered < generated && this.pending.has(id)) {
        const index = p.delivered++;
        let first: FirstTokenTiming | undefined;
        if (index === 0) {
          p.firstTokenAt = end;
          this.cacheObserver?.stored(p.tokens);
          observer?.firstToken(end - p.submittedAt);
          const startedAt = p.startedAt >= 0 ? p.startedAt : p.submittedAt;
          first = {
            queueSeconds: (startedAt - p.submittedAt) / this.timeScale,
            prefillSeconds: (end - startedAt) / this.timeScale,
          };
        } else {
          observer?.nextToken(end - p.lastTokenAt);
        }
        p.lastTokenAt = end;
        p.listener.onToken?.(index, first);
      }
      if (finish !== undefined && this.pending.has(id)) {
        this.pending.delete(id);
        // Observed before the listener answers, so a client that got its answer sees it in /metrics.
        observer?.finished(timingsOf(p, finish, end));
        p.listener.onFinish?.(finish);
      }
    }
  }
}

function timingsOf(p: Pending, finish: EngineFinish, end: number): FinishedTimings {
  const startedAt = p.startedAt >= 0 ? p.startedAt : p.submittedAt;
  const firstTokenAt = p.firstTokenAt >= 0 ? p.firstTokenAt : end;
  return {
    e2e: end - p.submittedAt,
    queue: startedAt - p.submittedAt,
    prefill: firstTokenAt - startedAt,
    decode: end - firstTokenAt,
    promptTokens: finish.promptTokens,
    generationTokens: finish.outputTokens,
  };
}
