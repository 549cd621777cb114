import { type ChildProcess, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { signalChild, spawnChild } from '../util/child-group.ts';

export interface LlamaProcessOptions {
  binary: string;
  args: readonly string[];
  /** Base URL the server will listen on, for the health check. */
  url: string;
  startTimeoutMs: number;
  /** Every log line of the server (it logs to stderr); without it only a tail is kept. */
  onLog?: (line: string) => void;
}

const TAIL_LINES = 40;

/** One running llama-server child, with the last lines of its output kept for error messages. */
export class LlamaProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  private readonly tail: string[] = [];
  private spawnError: string | undefined;
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  readonly exited: Promise<void>;

  private constructor(private readonly options: LlamaProcessOptions) {
    // In a process group of its own, killed with this process at the latest (a crash included).
    const [command, args] = dyingWithParent(options.binary, options.args);
    this.child = spawnChild(command, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: withoutLlamaArgs(),
    });
    // No pid when spawn failed (ENOENT, EACCES); the 'error' event below carries the reason.
    this.pid = this.child.pid ?? 0;
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        resolve();
      });
      this.child.once('error', (error) => {
        this.spawnError = error.message;
        this.exitInfo ??= { code: null, signal: null };
        resolve();
      });
    });
    // Always drain the pipes: a full pipe would block the server.
    for (const stream of [this.child.stdout, this.child.stderr]) {
      let partial = '';
      stream?.on('data', (chunk: Buffer) => {
        const lines = (partial + chunk.toString('utf8')).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) this.log(line);
      });
    }
  }

  private log(line: string): void {
    this.tail.push(line);
    if (this.tail.length > TAIL_LINES) this.tail.shift();
    this.options.onLog?.(line);
  }

  get running(): boolean {
    return this.exitInfo === undefined;
  }

  /** How it ended ("exited with code 1", "was killed by SIGSEGV"), once it has. */
  get howItEnded(): string | undefined {
    if (this.exitInfo === undefined) return undefined;
    if (this.spawnError !== undefined) return `could not run: ${this.spawnError}`;
    const { code, signal } = this.exitInfo;
    return signal ? `was killed by ${signal}` : `exited with code ${code}`;
  }

  /** The last lines the server printed. */
  lastLines(n = 15): string {
    return this.tail.slice(-n).join('\n');
  }

  /** Spawn the server and wait until GET /health answers 200 (the model is loaded). */
  static async start(options: LlamaProcessOptions): Promise<LlamaProcess> {
    const proc = new LlamaProcess(options);
    const deadline = Date.now() + options.startTimeoutMs;
    while (Date.now() < deadline) {
      if (!proc.running) {
        if (proc.spawnError) throw new Error(`could not run ${options.binary}: ${proc.spawnError}`);
        throw new Error(
          `llama-server ${proc.howItEnded} before it was ready; its last output:\n${proc.lastLines()}`,
        );
      }
      if (await healthy(options.url)) return proc;
      await sleep(100);
    }
    await proc.stop(2000);
    throw new Error(
      `llama-server at ${options.url} was not ready within ${options.startTimeoutMs / 1000} s; ` +
        `its last output:\n${proc.lastLines()}`,
    );
  }

  /** SIGTERM by PID, then SIGKILL if it has not exited after `graceMs`. */
  async stop(graceMs = 5000): Promise<void> {
    if (!this.running) return;
    this.signal('SIGTERM');
    const cancel = new AbortController();
    const timer = sleep(graceMs, 'timeout' as const, { signal: cancel.signal }).catch(
      () => 'exited' as const,
    );
    const outcome = await Promise.race([this.exited.then(() => 'exited' as const), timer]);
    cancel.abort(); // do not keep the event loop alive for the rest of the grace period
    if (outcome === 'timeout') {
      this.signal('SIGKILL');
      await this.exited;
    }
  }

  /** Kill at once, as a crash would (SIGKILL by PID), and wait for the exit. */
  async kill(): Promise<void> {
    if (!this.running) return;
    this.signal('SIGKILL');
    await this.exited;
  }

  private signal(signal: NodeJS.Signals): void {
    signalChild(this.child, signal);
  }
}

/** util-linux's setpriv, where there is one (Linux). */
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path));

/** Whether `setpriv --pdeathsig` runs here: util-linux before 2.33 has setpriv but not the option. */
function setprivDeathSignal(setpriv: string): boolean {
  return spawnSync(setpriv, ['--pdeathsig', 'SIGKILL', '--', 'true'], { stdio: 'ignore' }).status === 0;
}

/** The setpriv to use, asked once (lazily: no process is spawned at import), or undefined. */
let probed: { setpriv: string | undefined } | undefined;
function usableSetpriv(): string | undefined {
  probed ??= { setpriv: pdeathsigRunner(SETPRIV, setprivDeathSignal) };
  return probed.setpriv;
}

/** `setpriv` where it exists and its `--pdeathsig` works (the probe); otherwise none. */
export function pdeathsigRunner(
  setpriv: string | undefined,
  works: (setpriv: string) => boolean,
): string | undefined {
  return setpriv !== undefined && works(setpriv) ? setpriv : undefined;
}

/**
 * The command line that runs `binary` with the kernel's parent-death signal set (setpriv execs it,
 * so the PID is the server's): when this process dies, even by SIGKILL, which no exit handler sees,
 * the kernel kills the server rather than leaving it orphaned. (The kernel watches the thread that
 * forked it: Node spawns from the main thread, which lives as long as the process.) Without a setpriv
 * whose --pdeathsig works (or without the binary, so that the spawn error names it), the binary runs
 * as given.
 */
export function dyingWithParent(
  binary: string,
  args: readonly string[],
  setpriv: () => string | undefined = usableSetpriv,
): [string, readonly string[]] {
  if (!existsSync(binary)) return [binary, args];
  const runner = setpriv();
  if (runner === undefined) return [binary, args];
  return [runner, ['--pdeathsig', 'SIGKILL', '--', binary, ...args]];
}

/** The environment minus llama.cpp's LLAMA_ARG_* settings, so only the explicit flags configure a replica. */
function withoutLlamaArgs(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('LLAMA_ARG_')));
}

async function healthy(url: string): Promise<boolean> {
  try {
    const res = await request(`${url}/health`, { headersTimeout: 2000, bodyTimeout: 2000 });
    await res.body.dump();
    return res.statusCode === 200;
  } catch {
    return false; // not listening yet
  }
}
