import type { GlobalPolicy, InstanceId } from '../core/types.ts';
import type { Iteration } from '../engine/types.ts';
import type { IterationHooks } from './instance-runner.ts';

/**
 * One instance's engine iterations turned into the global policy's feedback, in the contract's
 * order (docs/design.md): admissions when the iteration begins; at its end, the evictions it made
 * when it began (stamped with that time, so a report cannot undo a later re-cache), then first
 * tokens, then finishes with the engine's token counts. The gateway gives the same calls from HTTP.
 */
export function policyFeedback(policy: GlobalPolicy, instance: InstanceId): IterationHooks {
  return {
    began(iteration: Iteration, start: number): void {
      for (const s of iteration.events.started) policy.requestStarted(s.id, start);
    },
    ended(iteration: Iteration, start: number, end: number): void {
      const ev = iteration.events;
      for (const e of ev.evictions) policy.instanceEvicted(instance, e.path, e.keptTokens, end, start);
      for (const id of ev.firstTokens) policy.requestFirstToken(id, end);
      for (const f of ev.finished) policy.requestFinished(f.id, end, f);
    },
  };
}
