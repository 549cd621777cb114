import { withDefaults } from '../with-defaults.ts';
import { admitInOrder, kvForAdmitted, noReserve } from './admission.ts';
import type { PreemptionPlan, QueueContext, QueuedRequest, QueuePolicy, RunningRequest } from './types.ts';

export interface FastServeOptions {
  /** Priority queues (levels); the last one keeps what it gets. Default 8. */
  readonly levels?: number;
  /** The top level's quantum in output tokens (decode steps); each level's is twice the one above. Default 8. */
  readonly quantumTokens?: number;
  /**
   * Prompt tokens whose prefill takes about as long as one decode step: the skip-join compares the
   * prefill's time with the quanta in these units. Default 128 (a 7-13B model's decode step on an
   * A100 is about the time of a 100-200-token prefill; our assumption, the paper measures it).
   */
  readonly prefillTokensPerStep?: number;
  /** Seconds a request may wait (since its arrival or last preemption) before it is promoted to the top level. Default 10. */
  readonly starveSeconds?: number;
}

export const fastServeDefaults: Required<FastServeOptions> = {
  levels: 8,
  quantumTokens: 8,
  prefillTokensPerStep: 128,
  starveSeconds: 10,
};

/** What FastServe's level needs of a request, waiting or running. */
type Ranked = Pick<QueuedRequest, 'promptTokens' | 'generatedTokens' | 'inputTokens'>;

/**
 * FastServe's skip-join multi-level feedback queue (Wu et al., 2023, §4.1), on output tokens:
 * - skip-join: a request joins the highest level whose quantum covers its first iteration (its prefill:
 *   input tokens / `prefillTokensPerStep` decode steps), so long prompts start lower;
 * - quanta double per level (level i: `quantumTokens` * 2^i output tokens); a request that has
 *   generated its level's quantum moves one level down (demotion is a function of the tokens it has
 *   generated, so it survives preemption and swapping);
 * - starvation: a request waiting `starveSeconds` since its arrival or last preemption is promoted to
 *   the top level while it waits (running, it ranks by its tokens again).
 * Assumptions (the paper's units are time; ours are tokens, with one decode step per output token).
 */
export function fastServeLevel(r: Ranked, options: Required<FastServeOptions> = fastServeDefaults): number {
  const { levels, quantumTokens, prefillTokensPerStep } = options;
  const input = r.inputTokens ?? r.promptTokens;
  const firstIterationSteps = Math.max(0, input) / prefillTokensPerStep;
  let level = 0;
  while (level < levels - 1 && quantumTokens * 2 ** level < firstIterationSteps) level++;
  let left = Math.max(0, r.generatedTokens ?? 0);
  while (level < levels - 1 && left >= quantumTokens * 2 ** level) {
    left -= quantumTokens * 2 ** level;
    level++;
  }
  return level;
}

/**
 * FastServe as a replica queue policy: waiting requests admitted by level (ties in queue order), and
 * preemption of running requests for a better-ranked waiting one, lowest level first (the youngest
 * among equals). The engine swaps its victims to its host KV pool (`EngineOptions.hostKvTokens`; it
 * recomputes them when the pool is full or absent) and swaps them back in by rank (`priority`).
 * FastServe swaps proactively, overlapped with compute; our engine charges each swap to the iteration
 * that does it (src/engine/host-swap.ts), so swap costs here are an upper bound of FastServe's.
 * The paper's "preemption" is iteration-level: the batch is the top jobs. Ours preempts when memory
 * lacks for a better-ranked waiting request (batch slots are rarely the limit of a paged engine).
 */
export function createFastServePolicy(options: FastServeOptions = {}): QueuePolicy {
  const o = withDefaults(fastServeDefaults, options);
  if (!Number.isInteger(o.levels) || o.levels < 1)
    throw new Error(`fastserve: levels must be an integer >= 1, got ${o.levels}`);
  if (!(o.quantumTokens >= 1) || !Number.isFinite(o.quantumTokens))
    throw new Error(`fastserve: quantumTokens must be finite and >= 1, got ${o.quantumTokens}`);
  if (!(o.prefillTokensPerStep > 0) || !Number.isFinite(o.prefillTokensPerStep))
    throw new Error(`fastserve: prefillTokensPerStep must be finite and > 0, got ${o.prefillTokensPerStep}`);
  if (!(o.starveSeconds > 0)) throw new Error(`fastserve: starveSeconds must be > 0, got ${o.starveSeconds}`);

  const priority = (r: QueuedRequest, now: number): number => {
    const since = r.preemptedAt ?? r.enqueuedAt;
    return now - since >= o.starveSeconds ? 0 : fastServeLevel(r, o);
  };
  const order: number[] = [];
  const ranks: number[] = [];

  function select(waiting: readonly QueuedRequest[], ctx: QueueContext): QueuedRequest[] {
    order.length = 0;
    ranks.length = 0;
    for (let i = 0; i < waiting.length; i++) {
      order.push(i);
      ranks.push(priority(waiting[i]!, ctx.now));
    }
    order.sort((a, b) => ranks[a]! - ranks[b]! || a - b);
    let position = 0;
    return admitInOrder(waiting, ctx, () => (position < order.length ? order[position++]! : -1), noReserve);
  }

  return {
    name: 'fastserve',
    preempts: true,
    reserveTokens: noReserve,
    select,
    priority,
    preemptFor(waiting, running, ctx): PreemptionPlan | undefined {
      const admitted = select(waiting, ctx);
      const before = kvForAdmitted(admitted, order.length, ctx);
      if (before === undefined) return undefined;
      const index = order[admitted.length]!;
      const target = waiting[index]!;
      const rank = ranks[index]!;
      const victims: { r: RunningRequest; level: number }[] = [];
      for (const r of running) {
        // Read field by field: an engine's request may expose them as getters.
        const level = fastServeLevel(
          {
            promptTokens: r.inputTokens ?? 0,
            inputTokens: r.inputTokens,
            generatedTokens: r.generatedTokens,
          },
          o,
        );
        if (level > rank) victims.push({ r, level });
      }
      if (victims.length === 0) return undefined;
      victims.sort((a, b) => b.level - a.level || b.r.enqueuedAt - a.r.enqueuedAt);
      const kvTokens = before + Math.max(0, target.promptTokens);
      return { target, kvTokens, victims: victims.map((v) => v.r) };
    },
  };
}
