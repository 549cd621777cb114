import type { NextIndex } from './admission.ts';
import type { QueuedRequest } from './types.ts';

/** TetriInfer's prefill scheduler orders (§3.3.1): arrival order, or by prompt length up or down. */
export type PrefillOrder = 'fcfs' | 'sjf' | 'ljf';

/**
 * TetriInfer's prefill scheduler (§3.3.1): the raw queue moves to the scheduled queue PrefillSchedBatch
 * requests at a time, each batch sorted by `order` (non-preemptive); a batch is formed once the
 * previous one has left the queue, so a request waits behind at most its own batch and those before
 * it (the paper's starvation bound). Stateful: it remembers the scheduled queue between iterations.
 * `nextIndex(waiting)` yields indices into `waiting` in scheduled order, forming batches as it goes.
 */
export class PrefillBatchScheduler {
  /** The scheduled queue: ids in scheduled order (some may have left the waiting queue since). */
  private scheduled: string[] = [];
  private readonly inScheduled = new Set<string>();

  constructor(
    private readonly order: PrefillOrder,
    private readonly batchSize: number,
  ) {}

  nextIndex(waiting: readonly QueuedRequest[]): NextIndex {
    const position = new Map<string, number>();
    for (let i = 0; i < waiting.length; i++) position.set(waiting[i]!.id, i);
    // Requests admitted or gone leave the scheduled queue.
    this.scheduled = this.scheduled.filter((id) => position.has(id));
    this.inScheduled.clear();
    for (const id of this.scheduled) this.inScheduled.add(id);
    let cursor = 0;
    let rawFrom = 0;
    return () => {
      if (cursor >= this.scheduled.length) rawFrom = this.formBatch(waiting, rawFrom);
      if (cursor >= this.scheduled.length) return -1;
      return position.get(this.scheduled[cursor++]!)!;
    };
  }

  /** Moves the next PrefillSchedBatch raw requests, sorted, to the scheduled queue; returns where the raw scan stopped. */
  private formBatch(waiting: readonly QueuedRequest[], from: number): number {
    const batch: { request: QueuedRequest; at: number }[] = [];
    let i = from;
    for (; i < waiting.length && batch.length < this.batchSize; i++) {
      const request = waiting[i]!;
      if (!this.inScheduled.has(request.id)) batch.push({ request, at: i });
    }
    if (this.order !== 'fcfs') {
      const sign = this.order === 'sjf' ? 1 : -1;
      batch.sort((a, b) => sign * (a.request.promptTokens - b.request.promptTokens) || a.at - b.at);
    }
    for (const { request } of batch) {
      this.scheduled.push(request.id);
      this.inScheduled.add(request.id);
    }
    return i;
  }
}
