import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { writeGgufModel } from '../../src/real/gguf/llama-model.ts';
import { runCli } from '../cli/run-cli.ts';

const dir = mkdtempSync(join(tmpdir(), 'preble-replicas-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('preble replicas model', () => {
  it('writes the same bytes as writeGgufModel', async () => {
    const out = join(dir, 'cli.gguf');
    const r = await runCli(['replicas', 'model', '--preset', 'tiny', '--seed', '3', '--out', out]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /cli\.gguf: tiny, \d+ parameters, \d+ bytes/);
    await writeGgufModel({ preset: 'tiny', seed: 3, path: join(dir, 'lib.gguf') });
    assert.ok(readFileSync(out).equals(readFileSync(join(dir, 'lib.gguf'))));
  });

  it('rejects an unknown preset in one line', async () => {
    const r = await runCli(['replicas', 'model', '--preset', 'huge', '--out', join(dir, 'x.gguf')]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /expected tiny, small or medium, got 'huge'/);
  });

  it('start refuses a model file that does not exist', async () => {
    const missing = join(dir, 'missing.gguf');
    // A private cache dir: the check must come before any build, which this would otherwise start.
    const r = await runCli(['replicas', 'start', '--count', '1', '--model', missing], {
      env: { PREBLE_CACHE_DIR: join(dir, 'cache') },
    });
    assert.equal(r.code, 1);
    assert.equal(r.stderr.trim(), `preble: --model: no such file: ${missing}`);
  });

  it('start takes --prefill and --decode together, not with --count', async () => {
    const env = { env: { PREBLE_CACHE_DIR: join(dir, 'cache') } };
    const alone = await runCli(['replicas', 'start', '--prefill', '1'], env);
    assert.equal(alone.code, 1);
    assert.match(alone.stderr, /--prefill and --decode go together/);
    const both = await runCli(['replicas', 'start', '--count', '1', '--prefill', '1', '--decode', '1'], env);
    assert.equal(both.code, 1);
    assert.match(both.stderr, /--count or --prefill\/--decode, not both/);
    const none = await runCli(['replicas', 'start'], env);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /give --count, or --prefill and --decode/);
  });
});
