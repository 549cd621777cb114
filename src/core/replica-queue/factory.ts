import { createFcfsPolicy } from './fcfs.ts';
import { createLarryPolicy, type LarryOptions } from './larry.ts';
import { createLpmPolicy } from './lpm.ts';
import { createNoPreemptPolicy, type NoPreemptOptions } from './no-preempt.ts';
import { createPriorityGroupsPolicy, type PriorityGroupsOptions } from './priority-groups.ts';
import { type QueuePolicy, type QueuePolicyName, queuePolicyNames } from './types.ts';

/** Options of every queue policy in one object; each policy reads only its own. */
export type QueuePolicyOptions = PriorityGroupsOptions & LarryOptions & NoPreemptOptions;

export function isQueuePolicyName(name: string): name is QueuePolicyName {
  return (queuePolicyNames as readonly string[]).includes(name);
}

/** A fresh policy by name (each instance owns its scratch buffers); unknown names throw. */
export function createQueuePolicy(name: string, options: QueuePolicyOptions = {}): QueuePolicy {
  if (!isQueuePolicyName(name)) {
    throw new Error(`unknown queue policy '${name}'; valid names: ${queuePolicyNames.join(', ')}`);
  }
  switch (name) {
    case 'fcfs':
      return createFcfsPolicy();
    case 'lpm':
      return createLpmPolicy();
    case 'priority-groups':
      return createPriorityGroupsPolicy(options);
    case 'larry':
      return createLarryPolicy(options);
    case 'no-preempt':
      return createNoPreemptPolicy(options);
  }
}
