import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { dyingWithParent, pdeathsigRunner } from '../../src/real/llama-process.ts';
import { writeFakeLlamaServer } from './fake-llama-server.ts';

const dir = mkdtempSync(join(tmpdir(), 'preble-llama-process-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const binary = writeFakeLlamaServer(dir);
const setpriv = ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path));
/** A setpriv whose --pdeathsig works (util-linux >= 2.33). */
const hasSetpriv =
  setpriv !== undefined && spawnSync(setpriv, ['--pdeathsig', 'SIGKILL', '--', 'true']).status === 0;

/** Running, and not a zombie waiting for whoever adopted it to reap it. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

test('the server runs under setpriv --pdeathsig where there is one, and as given otherwise', () => {
  const [command, args] = dyingWithParent(binary, ['-m', 'x.gguf']);
  if (hasSetpriv) {
    assert.match(command, /setpriv$/);
    assert.deepEqual(args, ['--pdeathsig', 'SIGKILL', '--', binary, '-m', 'x.gguf']);
  } else assert.deepEqual([command, args], [binary, ['-m', 'x.gguf']]);
  // A binary that is not there runs as given, so that the spawn error names it.
  assert.deepEqual(dyingWithParent(join(dir, 'nope'), []), [join(dir, 'nope'), []]);
});

test('setpriv is used only where its --pdeathsig works (older util-linux lacks it); the binary runs as given otherwise', () => {
  const asked: string[] = [];
  const probe = (works: boolean) => (path: string) => {
    asked.push(path);
    return works;
  };
  assert.equal(pdeathsigRunner('/usr/bin/setpriv', probe(true)), '/usr/bin/setpriv');
  assert.equal(pdeathsigRunner('/usr/bin/setpriv', probe(false)), undefined);
  // No setpriv: nothing to ask.
  assert.equal(pdeathsigRunner(undefined, probe(true)), undefined);
  assert.deepEqual(asked, ['/usr/bin/setpriv', '/usr/bin/setpriv']);
  assert.deepEqual(
    dyingWithParent(binary, ['-m', 'x.gguf'], () => undefined),
    [binary, ['-m', 'x.gguf']],
  );
  assert.deepEqual(
    dyingWithParent(binary, [], () => '/bin/setpriv'),
    ['/bin/setpriv', ['--pdeathsig', 'SIGKILL', '--', binary]],
  );
});

test('a server outlives no parent killed by SIGKILL', { skip: !hasSetpriv && 'no setpriv' }, async () => {
  // Not through spawnChild: the server then leads a group of its own, which no group kill of this
  // test reaches; only the parent-death signal can stop it.
  const { PREBLE_CHILD_GROUP: _, PREBLE_PARENT_PID: __, ...env } = process.env;
  const parent = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL('./llama-parent.ts', import.meta.url)), binary],
    { stdio: ['ignore', 'pipe', 'inherit'], env },
  );
  const exited = once(parent, 'exit');
  let out = '';
  parent.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  let pid: number | undefined;
  try {
    while (pid === undefined && parent.exitCode === null) {
      await new Promise((r) => setTimeout(r, 20));
      const m = /server (\d+)/.exec(out);
      if (m !== null) pid = Number(m[1]);
    }
    assert.ok(pid !== undefined && alive(pid), `the server started: ${out}`);
    parent.kill('SIGKILL');
    await exited;
    for (let i = 0; i < 500 && alive(pid); i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(alive(pid), false);
  } finally {
    parent.kill('SIGKILL');
    if (pid !== undefined && alive(pid)) process.kill(pid, 'SIGKILL');
  }
});
