import { Random } from '../random.ts';
import type { InstanceId, InstanceInfo, InstanceLoadSignal, RouteDecision, RouteRequest } from '../types.ts';
import { withDefaults } from '../with-defaults.ts';
import { BasePolicy } from './base-policy.ts';
import { PerInstanceNumbers } from './support/per-instance-numbers.ts';

export interface PowerOfTwoOptions {
  /** Seed of the candidate draws. Default 0. */
  readonly seed?: number;
  /**
   * What "lighter" means. 'inflight' (default): fewer router-counted in-flight requests.
   * 'polled': fewer queued prefill tokens in the last polled load signal, plus the prompt tokens
   * this router sent there since that poll; when either candidate has not been polled yet, the
   * pair is compared by in-flight counts instead.
   */
  readonly signal?: 'inflight' | 'polled';
}

export const powerOfTwoDefaults: Required<PowerOfTwoOptions> = { seed: 0, signal: 'inflight' };

/**
 * Power of two random choices: draw two distinct instances, send to the lighter one. Nearly the
 * balance of least-load at the cost of two reads, and no herding on a single "best" instance.
 * Equal loads fall back to in-flight counts, then to the first drawn (itself random).
 */
export class PowerOfTwoPolicy extends BasePolicy {
  readonly name = 'power-of-two';
  readonly branches = ['load'] as const;
  private readonly random: Random;
  private readonly polled: boolean;
  /**
   * Prompt tokens sent to each instance since its last poll. Polls come a few times a second;
   * a router trusting only them would herd every request onto the instance that looked lightest,
   * so it adds what it sent itself (the SAL paper does the same). Reset by each poll.
   */
  private readonly sincePoll = new PerInstanceNumbers();

  constructor(options: PowerOfTwoOptions = {}) {
    super();
    const { seed, signal } = withDefaults(powerOfTwoDefaults, options);
    this.random = new Random(seed);
    if (signal !== 'inflight' && signal !== 'polled') {
      throw new Error(`power-of-two: signal must be 'inflight' or 'polled', got ${String(signal)}`);
    }
    this.polled = signal === 'polled';
  }

  protected choose(_request: RouteRequest, _now: number, active: readonly InstanceId[]): RouteDecision {
    const n = active.length;
    if (n === 1) {
      const only = active[0]!;
      return { instance: only, branch: 'load', matchedTokens: 0, costs: [{ instance: only, total: 0 }] };
    }
    const i = this.random.int(0, n - 1);
    let j = this.random.int(0, n - 2);
    if (j >= i) j++;
    const a = active[i]!;
    const b = active[j]!;
    const inflightA = this.view.inflight(a);
    const inflightB = this.view.inflight(b);
    let loadA = inflightA;
    let loadB = inflightB;
    if (this.polled) {
      const signalA = this.view.state(a)?.signal;
      const signalB = this.view.state(b)?.signal;
      if (signalA !== undefined && signalB !== undefined) {
        loadA = this.queuedTokens(a, signalA);
        loadB = this.queuedTokens(b, signalB);
      }
    }
    const pickB = loadB < loadA || (loadB === loadA && inflightB < inflightA);
    return {
      instance: pickB ? b : a,
      branch: 'load',
      matchedTokens: 0,
      costs: [
        { instance: a, total: loadA },
        { instance: b, total: loadB },
      ],
    };
  }

  override instanceAdded(instance: InstanceId, info: InstanceInfo, now: number): void {
    super.instanceAdded(instance, info, now);
    this.sincePoll.set(instance, 0);
  }

  override loadSignal(instance: InstanceId, signal: InstanceLoadSignal, now: number): void {
    super.loadSignal(instance, signal, now);
    this.sincePoll.set(instance, 0);
  }

  protected override onRouted(request: RouteRequest, decision: RouteDecision): void {
    if (this.polled) this.sincePoll.add(decision.instance, request.tokens.length);
  }

  private queuedTokens(instance: InstanceId, signal: InstanceLoadSignal): number {
    return signal.queuedPrefillTokens + this.sincePoll.get(instance);
  }
}
