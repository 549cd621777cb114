import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const main = fileURLToPath(new URL('../cli/main.ts', import.meta.url));

/** A `preble` command running in its own process (an engine or a gateway), known by its PID. */
export interface PrebleProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** The URL of its readiness line. */
  readonly url: string;
  /** The last few kilobytes it wrote to stderr (its logs). */
  stderr(): string;
  /** Signal it and wait for it to exit (SIGKILL after `graceMs` if it lingers). */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<void>;
}

/**
 * Start `preble ARGS...` (through tsx, as `npm run preble` does) and resolve once it prints its
 * readiness line `listening on URL`; reject with its stderr if it exits first or takes too long.
 */
export function startPreble(
  args: readonly string[],
  timeoutMs = 30_000,
  env: NodeJS.ProcessEnv = {},
): Promise<PrebleProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', main, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-16_000);
  });
  const stop = async (signal: NodeJS.Signals = 'SIGTERM', graceMs = 10_000) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`preble ${args[0]} was not ready within ${timeoutMs} ms: ${stderr.trim()}`));
    }, timeoutMs);
    const onData = (d: Buffer) => {
      out += d.toString();
      const line = /^listening on (\S+)$/m.exec(out);
      if (line === null) return;
      clearTimeout(timer);
      child.stdout.off('data', onData);
      child.stdout.resume(); // keep draining: a full pipe would block the child
      resolve({ child, pid: child.pid!, url: line[1]!, stop, stderr: () => stderr });
    };
    child.stdout.on('data', onData);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`preble ${args[0]} exited (${code ?? signal}) before it was ready: ${stderr.trim()}`));
    });
  });
}
