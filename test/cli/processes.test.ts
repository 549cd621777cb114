import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { startPreble } from '../../src/bench/preble-process.ts';

const launcher = fileURLToPath(new URL('../../bin/preble.js', import.meta.url));
const parentScript = fileURLToPath(new URL('../fixtures/preble-parent.ts', import.meta.url));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function answers(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(10_000) });
    await res.body?.cancel();
    return true;
  } catch {
    return false;
  }
}

/** Poll until `condition` holds; the bound only catches a process that never goes away. */
async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let waited = 0; waited < 120_000; waited += 50) {
    if (await condition()) return;
    await sleep(50);
  }
  throw new Error(`still waiting for ${what} after 120 s`);
}

/** The first stdout line matching `pattern`; rejects with stderr if the process exits first. */
function lineOf(child: ChildProcess, pattern: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = pattern.exec(out);
      if (m) resolve(m);
    });
    child.once('exit', (code) => reject(new Error(`exited (${code}) first: ${err}`)));
  });
}

describe('waiting for a spawned preble process to be ready', () => {
  it('a child that exits before its readiness line is reported with its stderr', async () => {
    await assert.rejects(
      startPreble(['engine', '--port', 'abc']),
      /preble engine exited \(1\) before it was ready: error: option '--port <p>' argument 'abc' is invalid/,
    );
  });

  it('a child that never prints its readiness line is killed at the bound, with a clear message', async () => {
    // A simulation that runs for minutes and never listens: the bound (0.5 s here, minutes by default) ends it.
    const started = startPreble(['sim', '--workload', 'toolbench', '--requests', '100000000'], {
      readyTimeoutMs: 500,
    });
    await assert.rejects(started, /preble sim printed no readiness line within 0\.5 s \(hung\?\)/);
  });
});

describe('spawned preble processes never outlive whoever started them', () => {
  it('SIGTERM to the launcher PID stops the engine: the launcher runs it in its own process', async () => {
    const engine = await startPreble(['engine', '--port', '0', '--time-scale', '1000']);
    try {
      assert.ok(await answers(engine.url));
      const exited = once(engine.child, 'exit');
      process.kill(engine.pid, 'SIGTERM');
      assert.deepEqual(await exited, [0, null]);
      assert.equal(await answers(engine.url), false);
    } finally {
      await engine.stop('SIGKILL');
    }
  });

  it('under npm (npx preble engine &), a signal to npm that ends its shell ends the engine too', async () => {
    // npm exec runs the bin through `sh -c` and passes SIGTERM to the shell only; the shell dies of it.
    const shell = spawn(
      'sh',
      ['-c', `"${process.execPath}" "${launcher}" engine --port 0 --time-scale 1000; :`],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, npm_lifecycle_event: 'npx' },
        detached: true,
      },
    );
    try {
      const [, url] = await lineOf(shell, /^listening on (\S+)$/m);
      assert.ok(await answers(url!));
      process.kill(shell.pid!, 'SIGTERM');
      await until(async () => !(await answers(url!)), 'the engine to stop after its shell died');
    } finally {
      try {
        process.kill(-shell.pid!, 'SIGKILL');
      } catch {
        // the group is gone
      }
    }
  });

  for (const [how, end] of [
    ['crashes (uncaught exception)', undefined],
    ['gets SIGTERM', 'SIGTERM'],
    ['gets SIGINT', 'SIGINT'],
    ['is killed (SIGKILL, no handler runs)', 'SIGKILL'],
  ] as const) {
    it(`a parent that ${how} leaves no engine behind`, async () => {
      const parent = spawn(
        process.execPath,
        ['--import', 'tsx', parentScript, end === undefined ? 'crash' : 'wait'],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let enginePid = 0;
      try {
        const exited = once(parent, 'exit');
        const [, pid, url] = await lineOf(parent, /^engine (\d+) (\S+)$/m);
        enginePid = Number(pid);
        assert.ok(alive(enginePid));
        if (end !== undefined) parent.kill(end);
        await exited;
        await until(() => !alive(enginePid), `engine ${enginePid} to exit`);
        assert.equal(await answers(url!), false);
      } finally {
        if (parent.exitCode === null) parent.kill('SIGKILL');
        if (enginePid > 0 && alive(enginePid)) process.kill(enginePid, 'SIGKILL');
      }
    });
  }
});
