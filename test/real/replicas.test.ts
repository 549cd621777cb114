import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { request } from 'undici';
import { llamaServerArgs, startLlamaPdReplicas, startLlamaReplicas } from '../../src/real/replicas.ts';
import { writeFakeLlamaServer } from './fake-llama-server.ts';

const dir = mkdtempSync(join(tmpdir(), 'preble-replicas-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const binary = writeFakeLlamaServer(dir);

async function status(url: string, path = '/health'): Promise<number | string> {
  try {
    const res = await request(`${url}${path}`);
    if (path !== '/health') return await res.body.text();
    await res.body.dump();
    return res.statusCode;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? 'error';
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('llamaServerArgs', () => {
  it('pins the experiment settings instead of llama-server defaults', () => {
    const args = llamaServerArgs({ binary, model: '/m.gguf', count: 1, slots: 4, ctx: 8192 }, 9000);
    assert.deepEqual(args, [
      ...['-m', '/m.gguf', '--host', '127.0.0.1', '--port', '9000', '-t', '1', '-tb', '1'],
      ...['--cache-ram', '0', '--metrics', '--no-warmup', '-np', '4', '-c', '8192'],
    ]);
  });
});

describe('startLlamaReplicas (fake llama-server)', () => {
  it('starts N healthy replicas on distinct ports, restarts one on its port, and stops all', async () => {
    const fleet = await startLlamaReplicas({ binary, model: join(dir, 'ok.gguf'), count: 2, threads: 2 });
    try {
      assert.equal(fleet.urls.length, 2);
      assert.notEqual(fleet.urls[0], fleet.urls[1]);
      for (const url of fleet.urls) assert.equal(await status(url), 200);
      const args = JSON.parse(String(await status(fleet.urls[1]!, '/args'))) as string[];
      assert.equal(args[args.indexOf('--port') + 1], new URL(fleet.urls[1]!).port);
      assert.equal(args[args.indexOf('-tb') + 1], '2');

      const [first, second] = fleet.pids;
      await fleet.kill(1);
      assert.equal(alive(second!), false);
      assert.equal(await status(fleet.urls[1]!), 'ECONNREFUSED');
      assert.equal(await status(fleet.urls[0]!), 200);

      await fleet.restart(1);
      assert.equal(await status(fleet.urls[1]!), 200);
      assert.notEqual(fleet.pids[1], second);
      assert.equal(fleet.pids[0], first);
      await assert.rejects(fleet.kill(2), /no replica 2/);
    } finally {
      await fleet.stop();
    }
    for (const pid of fleet.pids) assert.equal(alive(pid), false);
  });

  it('SIGKILLs a replica that ignores SIGTERM after the grace period', async () => {
    const fleet = await startLlamaReplicas({ binary, model: join(dir, 'stubborn.gguf'), count: 1 });
    const started = Date.now();
    await fleet.stop(300);
    assert.ok(Date.now() - started >= 250);
    assert.equal(alive(fleet.pids[0]!), false);
  });

  it("reports a replica that exits while loading with the server's last lines", async () => {
    await assert.rejects(
      startLlamaReplicas({ binary, model: join(dir, 'crash.gguf'), count: 1 }),
      (error: Error) => {
        assert.match(error.message, /^replica 0: llama-server exited with code 1 before it was ready/);
        assert.match(error.message, /error loading model: bad magic/);
        return true;
      },
    );
  });

  it('gives up on a replica that never becomes healthy, and kills it', async () => {
    await assert.rejects(
      startLlamaReplicas({ binary, model: join(dir, 'hang.gguf'), count: 1, startTimeoutMs: 500 }),
      /replica 0: llama-server at http:\/\/127\.0\.0\.1:\d+ was not ready within 0\.5 s/,
    );
  });

  it('stops the replicas it started when a later one fails', async () => {
    const pids: number[] = [];
    await assert.rejects(
      startLlamaReplicas({
        binary,
        model: join(dir, 'second.gguf'),
        count: 3,
        onLog: (_, line) => {
          const m = /^pid (\d+)$/.exec(line);
          if (m) pids.push(Number(m[1]));
        },
      }),
      /^Error: replica 1: llama-server exited with code 1/,
    );
    assert.equal(pids.length, 2);
    for (const pid of pids) assert.equal(alive(pid), false);
  });

  it('says which binary is missing', async () => {
    await assert.rejects(
      startLlamaReplicas({ binary: join(dir, 'nope'), model: 'm.gguf', count: 1 }),
      /replica 0: could not run .*nope: spawn .*ENOENT/,
    );
  });
});

describe('startLlamaPdReplicas (fake llama-server)', () => {
  it('starts prefill then decode replicas sharing one --slot-save-path, and removes the directory it made', async () => {
    const fleet = await startLlamaPdReplicas({ binary, model: join(dir, 'pd.gguf'), prefill: 1, decode: 2 });
    try {
      assert.equal(fleet.prefillUrls.length, 1);
      assert.equal(fleet.decodeUrls.length, 2);
      assert.deepEqual([...fleet.prefillUrls, ...fleet.decodeUrls], fleet.urls);
      assert.ok(existsSync(fleet.slotSavePath));
      for (const url of fleet.urls) {
        const args = JSON.parse(String(await status(url, '/args'))) as string[];
        assert.equal(args[args.indexOf('--slot-save-path') + 1], fleet.slotSavePath);
      }
    } finally {
      await fleet.stop();
    }
    assert.equal(existsSync(fleet.slotSavePath), false);
    for (const pid of fleet.pids) assert.equal(alive(pid), false);
  });

  it('keeps a given slot directory', async () => {
    const slots = join(dir, 'slots');
    const fleet = await startLlamaPdReplicas({
      binary,
      model: join(dir, 'pd2.gguf'),
      prefill: 1,
      decode: 1,
      slotSavePath: slots,
    });
    await fleet.stop();
    assert.equal(fleet.slotSavePath, slots);
    assert.ok(existsSync(slots));
  });
});
