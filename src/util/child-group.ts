import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';

/**
 * Children that must never outlive this process: each runs in its own process group (so a kill
 * reaches whatever it started too), and this process kills every group still running when it exits,
 * whichever way: a normal end, `process.exit`, an uncaught exception or rejection (all of which emit
 * 'exit'), or SIGINT / SIGTERM / SIGHUP.
 *
 * A process that is itself such a child (`PREBLE_CHILD_GROUP` in its environment) starts its own
 * children inside its group instead of new ones, so that its parent's group kill reaches them too.
 * Each child also gets `PREBLE_PARENT_PID`: a `preble` command started that way exits when this
 * process is gone (see `watchParent`), which covers the one case no handler here can: SIGKILL.
 */
const running = new Map<ChildProcess, { readonly group: boolean }>();
let installed = false;

const SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

function onSignal(signal: NodeJS.Signals): void {
  // Someone else handles the signal too (a server's graceful drain): let it run; its exit kills the rest.
  if (process.listenerCount(signal) > 1) return;
  killAllChildren('SIGKILL');
  for (const s of SIGNALS) process.off(s, onSignal);
  process.kill(process.pid, signal); // die of the signal, as without this handler
}

function install(): void {
  if (installed) return;
  installed = true;
  process.on('exit', () => killAllChildren('SIGKILL'));
  for (const s of SIGNALS) process.on(s, onSignal);
}

/** Signal one child started by `spawnChild`: its whole group when it leads one. Never throws. */
export function signalChild(child: ChildProcess, signal: NodeJS.Signals): void {
  const pid = child.pid;
  if (pid === undefined || pid <= 0) return; // never kill(0) or kill(-1): those reach far more
  const entry = running.get(child);
  try {
    process.kill(entry?.group === true ? -pid : pid, signal);
  } catch {
    // already gone
  }
}

/** Signal every child still running (synchronous, so it works from an 'exit' handler). */
export function killAllChildren(signal: NodeJS.Signals = 'SIGKILL'): void {
  for (const child of running.keys()) signalChild(child, signal);
}

/** `spawn`, in a process group of its own, killed with this process at the latest. */
export function spawnChild(
  command: string,
  args: readonly string[],
  options: SpawnOptions = {},
): ChildProcess {
  install();
  const group = process.env['PREBLE_CHILD_GROUP'] === undefined;
  const child = spawn(command, args, {
    ...options,
    detached: group,
    env: {
      ...(options.env ?? process.env),
      PREBLE_CHILD_GROUP: '1',
      PREBLE_PARENT_PID: String(process.pid),
    },
  });
  if (child.pid === undefined) return child; // spawn failed: its 'error' event says why
  running.set(child, { group });
  // The group may outlive its leader (a grandchild): keep it listed until the leader's exit, then
  // kill what is left of the group, so nothing it started lingers either.
  child.once('exit', () => {
    if (group) signalChild(child, 'SIGKILL');
    running.delete(child);
  });
  return child;
}

/**
 * In a process started by `spawnChild` (or by the launcher under npm), exit as on SIGTERM once the
 * parent that started it is gone. Checks the parent PID once a second; never keeps the process alive.
 */
export function watchParent(): void {
  const expected = Number(process.env['PREBLE_PARENT_PID']);
  if (!Number.isInteger(expected) || expected <= 1 || process.ppid !== expected) return;
  const timer = setInterval(() => {
    if (process.ppid === expected) return;
    clearInterval(timer);
    process.kill(process.pid, 'SIGTERM');
  }, 1000);
  timer.unref();
}
