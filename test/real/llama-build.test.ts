import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  ensureLlamaServer,
  llamaServerPath,
  NODE_LLAMA_CPP_VERSION,
  removeStaleBuilds,
  STALE_BUILD_MS,
} from '../../src/real/llama-build.ts';
import { runTool } from '../../src/real/run-tool.ts';
import { prebleCacheDir } from '../../src/util/cache-dir.ts';

const dir = mkdtempSync(join(tmpdir(), 'preble-build-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('llama-server cache', () => {
  it('lives under $PREBLE_CACHE_DIR or ~/.cache/preble, keyed by the node-llama-cpp version', () => {
    assert.equal(prebleCacheDir({}), join(homedir(), '.cache', 'preble'));
    assert.equal(prebleCacheDir({ PREBLE_CACHE_DIR: '/x/y' }), '/x/y');
    assert.equal(
      llamaServerPath('/c'),
      `/c/llama-server/node-llama-cpp-${NODE_LLAMA_CPP_VERSION}/bin/llama-server`,
    );
  });

  it('reuses a cached binary whose --version runs, without building', async () => {
    const cacheDir = join(dir, 'cached');
    const binary = llamaServerPath(cacheDir);
    mkdirSync(dirname(binary), { recursive: true });
    writeFileSync(binary, '#!/bin/sh\n[ "$1" = --version ] && echo "version: fake" && exit 0\nexit 1\n');
    chmodSync(binary, 0o755);
    const progress: string[] = [];
    assert.equal(await ensureLlamaServer({ cacheDir, onProgress: (l) => progress.push(l) }), binary);
    assert.deepEqual(progress, []);
  });

  it('removes scratch folders a killed build left, older than any build lasts, and nothing else', async () => {
    const builds = join(dir, 'stale', 'llama-server');
    const now = Date.now();
    for (const name of ['build-old', 'build-running', 'node-llama-cpp-x', 'build-file']) {
      if (name === 'build-file') writeFileSync(join(builds, name), '');
      else mkdirSync(join(builds, name, 'llama.cpp'), { recursive: true });
    }
    const old = (now - STALE_BUILD_MS - 60_000) / 1000;
    for (const name of ['build-old', 'node-llama-cpp-x', 'build-file'])
      utimesSync(join(builds, name), old, old);
    assert.deepEqual(await removeStaleBuilds(builds, now), ['build-old']);
    assert.equal(existsSync(join(builds, 'build-old')), false);
    for (const name of ['build-running', 'node-llama-cpp-x', 'build-file'])
      assert.ok(existsSync(join(builds, name)), `${name} kept`);
    assert.deepEqual(await removeStaleBuilds(join(dir, 'no-such-dir'), now), []);
  });

  it('names a missing build tool and how to get it, in one line', async () => {
    const path = process.env['PATH'];
    process.env['PATH'] = join(dir, 'empty-path'); // no cmake, no compiler, no git
    const attempt = ensureLlamaServer({ cacheDir: join(dir, 'none') });
    process.env['PATH'] = path; // the tool check runs before the first await
    await assert.rejects(attempt, (error: Error) => {
      assert.match(error.message, /needs cmake.*apt-get install cmake/);
      assert.doesNotMatch(error.message, /\n/);
      return true;
    });
  });
});

describe('runTool', () => {
  it('resolves with the output tail on success', async () => {
    const out = await runTool(process.execPath, ['-e', 'console.log("a"); console.error("b")']);
    assert.match(out, /a/);
    assert.match(out, /b/);
  });

  it("quotes the tool's last lines and exit code on failure", async () => {
    const script = 'for (let i = 0; i < 100; i++) console.log("line " + i); process.exit(3)';
    await assert.rejects(runTool(process.execPath, ['-e', script], { tailLines: 5 }), (error: Error) => {
      assert.match(error.message, /failed \(exit code 3\)/);
      assert.match(error.message, /line 95\nline 96\nline 97\nline 98\nline 99$/);
      assert.doesNotMatch(error.message, /line 94/);
      return true;
    });
  });

  it('says when the tool is not installed', async () => {
    await assert.rejects(runTool('preble-no-such-tool', []), /preble-no-such-tool: command not found/);
  });

  it('kills a tool that runs past its timeout', async () => {
    await assert.rejects(
      runTool(process.execPath, ['-e', 'setTimeout(() => {}, 10000)'], { timeoutMs: 200 }),
      /timed out after 0.2 s/,
    );
  });
});
