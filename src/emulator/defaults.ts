// Constants of `preble engine` that its CLI needs before it loads the server (and Fastify): kept in
// a module with no imports so `preble engine --help` and a bad flag answer at once.

export const DEFAULT_MODEL = 'mistral-7b-a6000';
export const DEFAULT_QUEUE_POLICY = 'lpm';
export const DEFAULT_BODY_LIMIT = 4 * 1024 * 1024;
/** The statuses `--fail-status` (and the fault route's `failStatus`) may take. */
export const FAIL_STATUS_RANGE = [400, 599] as const;
/** The statuses `--health-status` (and the fault route's `healthStatus`) may take. */
export const HEALTH_STATUS_RANGE = [200, 599] as const;
