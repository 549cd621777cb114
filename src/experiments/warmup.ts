/** E2's window H (the paper's 3 minutes): the history its load and popularity figures need. */
export const WINDOW_SECONDS = 180;

/**
 * The warm-up the Preble experiments leave out of their figures: the first H = 180 s of arrivals or
 * the first third of them, whichever is shorter. The caches start cold and E2's window starts empty,
 * so the first requests measure start-up rather than the policy; a run much shorter than a few H
 * never reaches a steady state, and its report says so.
 */
export function warmupSeconds(requests: number, rps: number): number {
  return Math.min(WINDOW_SECONDS, requests / rps / 3);
}

/**
 * Requests for a run that reaches E2's steady state at `rps`: at least three windows of arrivals
 * (3H), so that a warm-up of one full window (`warmupSeconds` gives H then) leaves two steady windows.
 */
export function steadyRequests(requests: number, rps: number): number {
  return Math.max(requests, Math.ceil(rps * 3 * WINDOW_SECONDS));
}
