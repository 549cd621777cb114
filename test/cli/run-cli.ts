import { type RunOptions, runPreble } from '../../src/bench/preble-process.ts';

/**
 * Run the real CLI in a child process (as a user would: through bin/preble.js), returning its exit
 * code and output. Asynchronous, so a server this test process runs keeps answering it; the child
 * runs in its own process group, killed with this process at the latest.
 */
export function runCli(
  args: readonly string[],
  options: RunOptions = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return runPreble(args, options);
}
