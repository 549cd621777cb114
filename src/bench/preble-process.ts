import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { signalChild, spawnChild } from '../util/child-group.ts';

/**
 * The launcher, as a user runs `preble`: it starts the compiled dist/ when that is up to date with
 * src/ (a fraction of a second) and the sources through tsx otherwise. The same path from src/ and dist/.
 */
const launcher = fileURLToPath(new URL('../../bin/preble.js', import.meta.url));

/**
 * How long a child may take to print its readiness line before it counts as hung. Generous on
 * purpose: a loaded machine that compiles the sources through tsx can take tens of seconds, and
 * only a child that never gets there should fail (a child that exits early fails at once).
 */
export const READY_TIMEOUT_MS = 5 * 60_000;

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

export interface StartOptions {
  /** Added to this process's environment. */
  readonly env?: NodeJS.ProcessEnv;
  /** How long it may take to print its readiness line (default READY_TIMEOUT_MS). */
  readonly readyTimeoutMs?: number;
}

function spawnPreble(args: readonly string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  return spawnChild(process.execPath, [launcher, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
}

function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/**
 * Start `preble ARGS...` in its own process group and resolve once it prints its readiness line
 * `listening on URL`; reject with its stderr if it exits first, or if it is still not ready after
 * `readyTimeoutMs`. The child dies with this process at the latest (see `spawnChild`).
 */
export function startPreble(args: readonly string[], options: StartOptions = {}): Promise<PrebleProcess> {
  const timeoutMs = options.readyTimeoutMs ?? READY_TIMEOUT_MS;
  const child = spawnPreble(args, options.env);
  const name = `preble ${args[0] ?? ''}`.trim();
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-16_000);
  });
  const stop = async (signal: NodeJS.Signals = 'SIGTERM', graceMs = 10_000) => {
    if (exited(child)) return;
    const done = once(child, 'exit');
    signalChild(child, signal);
    const timer = setTimeout(() => signalChild(child, 'SIGKILL'), graceMs);
    await done;
    clearTimeout(timer);
  };
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      signalChild(child, 'SIGKILL');
      reject(
        new Error(
          `${name} printed no readiness line within ${timeoutMs / 1000} s (hung?); stderr: ${stderr.trim()}`,
        ),
      );
    }, timeoutMs);
    const onData = (d: Buffer) => {
      out += d.toString();
      const line = /^listening on (\S+)$/m.exec(out);
      if (line === null) return;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.stdout!.resume(); // keep draining: a full pipe would block the child
      resolve({ child, pid: child.pid!, url: line[1]!, stop, stderr: () => stderr });
    };
    child.stdout!.on('data', onData);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`${name} could not start: ${error.message}`));
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code ?? signal}) before it was ready: ${stderr.trim()}`));
    });
  });
}

export interface RunOptions {
  readonly env?: NodeJS.ProcessEnv;
  /** Kill it (its whole group) if it runs longer than this; the default is 10 minutes. */
  readonly timeoutMs?: number;
}

/**
 * Run `preble ARGS...` to its end in its own process group, as a user would, and resolve with its
 * exit code and output. It never blocks this process's event loop (a server this process runs can
 * keep answering it) and is killed with this process at the latest.
 */
export function runPreble(
  args: readonly string[],
  options: RunOptions = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const timeoutMs = options.timeoutMs ?? 10 * 60_000;
  const child = spawnPreble(args, options.env);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  return new Promise((resolve, reject) => {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      signalChild(child, 'SIGKILL');
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`preble ${args.join(' ')} could not start: ${error.message}`));
    });
    // 'close', not 'exit': the output is complete only once the pipes are.
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (timedOut)
        reject(
          new Error(`preble ${args.join(' ')} still ran after ${timeoutMs / 1000} s; stderr: ${stderr}`),
        );
      else resolve({ code: code ?? (signal === null ? -1 : 128), stdout, stderr });
    });
  });
}
