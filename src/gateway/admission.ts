/** Settings of the gateway's admission control. */
export interface AdmissionOptions {
  /** Requests the gateway forwards at once; Infinity: no limit. */
  readonly maxConcurrent: number;
  /** Requests that may wait for a slot; beyond that, 429 at once. */
  readonly maxQueue: number;
  /** Seconds a request may wait in the queue before it gets 429. */
  readonly queueTimeoutSeconds: number;
}

export type RefusalReason = 'queue_full' | 'queue_timeout';

/** Why a request was not admitted, with the seconds a client should wait before trying again. */
export class AdmissionRefused extends Error {
  constructor(
    readonly reason: RefusalReason,
    readonly retryAfterSeconds: number,
  ) {
    super(
      reason === 'queue_full'
        ? 'the gateway is at capacity and its queue is full; retry later'
        : 'the request waited too long for capacity; retry later',
    );
  }
}

/** Gives back an admitted request's slot; calling it again does nothing. */
export type Release = () => void;

interface Waiter {
  readonly grant: (release: Release) => void;
  readonly refuse: (error: Error) => void;
  readonly cleanup: () => void;
}

/**
 * Bounded concurrency with a bounded FIFO queue, so overload turns into quick 429s with a
 * Retry-After instead of unbounded queueing and memory. Clock and timers are the caller's edge
 * (`now` in seconds); the queue timeout uses setTimeout.
 */
export class Admission {
  private active = 0;
  private readonly waiting: Waiter[] = [];
  /** Smoothed seconds a slot is held, for Retry-After. */
  private holdSeconds = 1;

  constructor(
    private readonly options: AdmissionOptions,
    private readonly now: () => number,
  ) {}

  get inFlight(): number {
    return this.active;
  }

  get queued(): number {
    return this.waiting.length;
  }

  /** A slot, at once or after waiting; rejects with AdmissionRefused, or the signal's reason if aborted. */
  acquire(signal?: AbortSignal): Promise<Release> {
    if (this.active < this.options.maxConcurrent && this.waiting.length === 0)
      return Promise.resolve(this.take());
    if (this.waiting.length >= this.options.maxQueue)
      return Promise.reject(new AdmissionRefused('queue_full', this.retryAfter()));
    return new Promise<Release>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.leave(waiter);
        reject(new AdmissionRefused('queue_timeout', this.retryAfter()));
      }, this.options.queueTimeoutSeconds * 1000);
      const onAbort = () => {
        this.leave(waiter);
        reject(signal?.reason ?? new Error('aborted'));
      };
      const waiter: Waiter = {
        grant: resolve,
        refuse: reject,
        cleanup: () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  /** Refuse everyone still waiting (shutdown). */
  refuseWaiting(error: Error): void {
    for (const w of this.waiting.splice(0)) {
      w.cleanup();
      w.refuse(error);
    }
  }

  private take(): Release {
    this.active++;
    const since = this.now();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.active--;
      this.holdSeconds = 0.9 * this.holdSeconds + 0.1 * Math.max(0, this.now() - since);
      const next = this.waiting.shift();
      if (next !== undefined) {
        next.cleanup();
        next.grant(this.take());
      }
    };
  }

  private leave(waiter: Waiter): void {
    waiter.cleanup();
    const at = this.waiting.indexOf(waiter);
    if (at >= 0) this.waiting.splice(at, 1);
  }

  /** Whole seconds until a slot is likely free for a new arrival: the queue ahead at the recent hold time. */
  private retryAfter(): number {
    const slots = Number.isFinite(this.options.maxConcurrent) ? this.options.maxConcurrent : 1;
    return Math.max(1, Math.ceil((this.holdSeconds * (this.waiting.length + 1)) / slots));
  }
}
