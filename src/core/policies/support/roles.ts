import type { ClusterView } from '../../cluster-view.ts';
import type { InstanceId, Role } from '../../types.ts';

/** The instances of `ids` whose role (as the view knows it; absent: mixed) is `role`. */
export function withRole(view: ClusterView, ids: readonly InstanceId[], role: Role): InstanceId[] {
  return ids.filter((id) => (view.state(id)?.info.role ?? 'mixed') === role);
}

/**
 * The view knows a prefill or decode instance (a disaggregated fleet), draining ones included; else the
 * fleet is colocated (disaggregated policies refuse it in one line).
 */
export function hasRoles(view: ClusterView): boolean {
  for (const s of view.known()) if (s.info.role === 'prefill' || s.info.role === 'decode') return true;
  return false;
}
