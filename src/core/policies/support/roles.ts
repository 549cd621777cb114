import type { ClusterView } from '../../cluster-view.ts';
import type { InstanceId, Role } from '../../types.ts';

/** The ids among `ids` whose instance has `role` in the view (disaggregated policies pick pools with it). */
export function withRole(view: ClusterView, ids: readonly InstanceId[], role: Role): InstanceId[] {
  return ids.filter((id) => view.state(id)?.info.role === role);
}

/** Whether any known instance is a prefill or decode one (else the fleet is colocated: a one-line refusal). */
export function hasDisaggregatedRoles(view: ClusterView): boolean {
  for (const s of view.known()) if (s.info.role === 'prefill' || s.info.role === 'decode') return true;
  return false;
}
