import { signalChild, spawnChild } from '../util/child-group.ts';

export interface RunToolOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Kill the tool (SIGKILL) after this many milliseconds. */
  timeoutMs?: number;
  /** Called with every output line (stdout and stderr), e.g. to report build progress. */
  onLine?: (line: string) => void;
  /** How many trailing output lines a failure message quotes. */
  tailLines?: number;
}

/**
 * Run an external tool with its output captured rather than inherited, so a failure can quote
 * the tool's last lines and a success stays quiet. Resolves with the captured tail.
 */
export function runTool(
  command: string,
  args: readonly string[],
  options: RunToolOptions = {},
): Promise<string> {
  const keep = options.tailLines ?? 30;
  const tail: string[] = [];
  return new Promise((resolve, reject) => {
    // A process group of its own: a timeout kills what the tool started too (make, the compilers).
    const child = spawnChild(command, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let partial = '';
    const onData = (chunk: Buffer) => {
      const lines = (partial + chunk.toString('utf8')).split(/\r?\n/);
      partial = lines.pop() ?? '';
      for (const line of lines) push(line);
    };
    const push = (line: string) => {
      tail.push(line);
      if (tail.length > keep) tail.shift();
      options.onLine?.(line);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    let timedOut = false;
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            signalChild(child, 'SIGKILL');
          }, options.timeoutMs);
    child.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(
        new Error(error.code === 'ENOENT' ? `${command}: command not found` : `${command}: ${error.message}`),
      );
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (partial) push(partial);
      const output = tail.join('\n');
      if (code === 0) return resolve(output);
      const why = timedOut
        ? `timed out after ${options.timeoutMs! / 1000} s`
        : signal
          ? `killed by ${signal}`
          : `exit code ${code}`;
      const cmdline = [command, ...args].join(' ');
      reject(new Error(`${cmdline} failed (${why}); last output:\n${output}`));
    });
  });
}
