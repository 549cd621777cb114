/** A pool thread's task (pool.ts): one capacity search, answered as JSON. */
import type { Capacity } from './capacity.ts';
import { type CapacityTask, runCapacityTask } from './task.ts';

export default function capacityTask(task: CapacityTask): Capacity {
  return runCapacityTask(task);
}
