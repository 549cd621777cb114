import TinyQueue from 'tinyqueue';
import type { CostModel } from '../core/cost-model/types.ts';
import type { GlobalPolicy, RouteDecision } from '../core/types.ts';
import type { WorkloadRequest } from '../workloads/types.ts';

interface Pending {
  readonly time: number;
  readonly kind: 'first-token' | 'finish';
  readonly id: string;
  readonly prompt: number;
  readonly cached: number;
  readonly output: number;
}

/**
 * Feedback without an engine, for benchmarks of the routing path: each request starts at once,
 * reports its first token after its prefill time and finishes after its decode time (cost model,
 * alone on its instance), with the cached tokens the policy predicted. Deterministic; no queueing.
 */
export class PseudoEngine {
  private readonly pending = new TinyQueue<Pending>([], (a, b) => a.time - b.time);

  constructor(
    private readonly policy: GlobalPolicy,
    private readonly costModel: CostModel,
  ) {}

  get inFlight(): number {
    return this.pending.length;
  }

  /** Deliver every feedback event due at or before `time`. */
  deliverUntil(time: number): void {
    const { pending, policy } = this;
    while (pending.length > 0 && pending.peek()!.time <= time) {
      const e = pending.pop()!;
      if (e.kind === 'first-token') policy.requestFirstToken(e.id, e.time);
      else
        policy.requestFinished(e.id, e.time, {
          promptTokens: e.prompt,
          cachedTokens: e.cached,
          outputTokens: e.output,
        });
    }
  }

  /** Start a routed request and schedule its feedback. */
  admit(request: WorkloadRequest, decision: RouteDecision): void {
    const prompt = request.tokens.length;
    const cached = decision.matchedTokens;
    this.policy.requestStarted(request.id, request.arrival);
    const firstToken = request.arrival + this.costModel.prefillTime(prompt - cached, cached);
    const finish = firstToken + this.costModel.decodeTime(request.outputTokens, prompt);
    const common = { id: request.id, prompt, cached, output: request.outputTokens };
    this.pending.push({ ...common, time: firstToken, kind: 'first-token' });
    this.pending.push({ ...common, time: finish, kind: 'finish' });
  }
}
