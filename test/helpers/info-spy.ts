import { RoundRobinPolicy } from '../../src/core/policies/round-robin.ts';
import type { InstanceId, InstanceInfo } from '../../src/core/types.ts';

/** Round robin that keeps what each instance joined with (its KV, role, cost model). */
export class InfoSpy extends RoundRobinPolicy {
  readonly infos = new Map<InstanceId, InstanceInfo>();
  override instanceAdded(instance: InstanceId, info: InstanceInfo, now: number) {
    this.infos.set(instance, info);
    super.instanceAdded(instance, info, now);
  }
}
