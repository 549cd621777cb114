import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, copyFile, mkdir, mkdtemp, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { prebleCacheDir } from '../util/cache-dir.ts';
import { runTool } from './run-tool.ts';

/** The npm package whose bundled llama.cpp source (a git bundle) we build; it pins the server version. */
export const NODE_LLAMA_CPP_VERSION = '3.22.1';

export interface EnsureLlamaServerOptions {
  /** Cache root (default: $PREBLE_CACHE_DIR or ~/.cache/preble). */
  cacheDir?: string;
  /** One human-readable line per step of a build. */
  onProgress?: (line: string) => void;
  /** Parallel compile jobs (default: the CPU count). */
  jobs?: number;
}

/** Where the cached binary lives for the pinned version. */
export function llamaServerPath(cacheDir: string = prebleCacheDir()): string {
  return join(cacheDir, 'llama-server', `node-llama-cpp-${NODE_LLAMA_CPP_VERSION}`, 'bin', 'llama-server');
}

/** Whether `binary --version` runs and exits 0 (a truncated or foreign binary does not). */
export function llamaServerWorks(binary: string): boolean {
  if (!existsSync(binary)) return false;
  const r = spawnSync(binary, ['--version'], { stdio: 'ignore', timeout: 30_000 });
  return r.status === 0;
}

const REQUIRED_TOOLS: readonly { names: readonly string[]; what: string; hint: string }[] = [
  { names: ['cmake'], what: 'cmake', hint: 'apt-get install cmake' },
  { names: ['c++', 'g++'], what: 'a C++ compiler (c++ or g++)', hint: 'apt-get install g++' },
  { names: ['git'], what: 'git', hint: 'apt-get install git' },
  { names: ['npm'], what: 'npm', hint: 'install Node.js with npm, e.g. apt-get install npm' },
];

function hasTool(name: string): boolean {
  const r = spawnSync(name, ['--version'], { stdio: 'ignore', timeout: 30_000 });
  return r.error === undefined && r.status === 0;
}

/** Fail early with one line naming the first missing tool, not deep inside cmake. */
function checkTools(): void {
  for (const tool of REQUIRED_TOOLS)
    if (!tool.names.some(hasTool))
      throw new Error(`building llama-server needs ${tool.what}, which was not found on PATH (${tool.hint})`);
}

// Portable x86-64 flags: the cached binary must also run on other CI runners, so no -march=native.
// LLAMA_USE_PREBUILT_UI=OFF stops configure from trying to download the web UI.
const CMAKE_FLAGS = [
  '-DCMAKE_BUILD_TYPE=Release',
  '-DGGML_NATIVE=OFF',
  '-DGGML_AVX2=ON',
  '-DGGML_FMA=ON',
  '-DGGML_F16C=ON',
  '-DLLAMA_USE_PREBUILT_UI=OFF',
  '-DGGML_CCACHE=OFF',
  '-DLLAMA_BUILD_TESTS=OFF',
  '-DLLAMA_BUILD_EXAMPLES=OFF',
  '-DBUILD_SHARED_LIBS=OFF',
];

/** A build lasts at most its steps' timeouts (about 80 minutes); a scratch folder this old was abandoned. */
export const STALE_BUILD_MS = 3 * 60 * 60_000;

/**
 * Remove scratch folders (`build-*`) that builds killed mid-way left in `buildsDir` (a finished or
 * failed build removes its own), each some hundreds of MB; younger ones may be builds still running.
 * Returns the names removed.
 */
export async function removeStaleBuilds(buildsDir: string, now = Date.now()): Promise<string[]> {
  const removed: string[] = [];
  const entries = await readdir(buildsDir, { withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    if (!e.isDirectory() || !e.name.startsWith('build-')) continue;
    const path = join(buildsDir, e.name);
    const info = await stat(path).catch(() => undefined);
    if (info === undefined || now - info.mtimeMs < STALE_BUILD_MS) continue;
    await rm(path, { recursive: true, force: true });
    removed.push(e.name);
  }
  return removed;
}

/**
 * The absolute path of a working llama-server: the cached one if it runs, otherwise one built
 * from the llama.cpp source bundled in node-llama-cpp (npm + cmake + a C++ compiler; a few minutes).
 */
export async function ensureLlamaServer(options: EnsureLlamaServerOptions = {}): Promise<string> {
  const cacheDir = options.cacheDir ?? prebleCacheDir();
  const progress = options.onProgress ?? (() => {});
  const binary = llamaServerPath(cacheDir);
  if (llamaServerWorks(binary)) return binary;

  checkTools();
  const buildsDir = join(cacheDir, 'llama-server');
  await mkdir(buildsDir, { recursive: true });
  for (const name of await removeStaleBuilds(buildsDir))
    progress(`removed an abandoned build folder, ${name}`);
  const scratch = await mkdtemp(join(buildsDir, 'build-'));
  const started = Date.now();
  const elapsed = () => `${Math.round((Date.now() - started) / 1000)} s`;
  try {
    progress(`building llama-server from node-llama-cpp@${NODE_LLAMA_CPP_VERSION} in ${scratch}`);
    await writeFile(join(scratch, 'package.json'), '{"name":"preble-llama-build","private":true}\n');
    progress(`npm install node-llama-cpp@${NODE_LLAMA_CPP_VERSION}`);
    await runTool(
      'npm',
      [
        'install',
        '--no-audit',
        '--no-fund',
        '--ignore-scripts',
        '--omit=optional',
        `node-llama-cpp@${NODE_LLAMA_CPP_VERSION}`,
      ],
      { cwd: scratch, timeoutMs: 10 * 60_000 },
    );

    const bundle = join(scratch, 'node_modules', 'node-llama-cpp', 'llama', 'gitRelease.bundle');
    if (!existsSync(bundle)) throw new Error(`node-llama-cpp@${NODE_LLAMA_CPP_VERSION} has no ${bundle}`);
    const source = join(scratch, 'llama.cpp');
    progress(`git clone the bundled llama.cpp source (${elapsed()})`);
    await runTool('git', ['clone', '-q', bundle, source], {
      timeoutMs: 5 * 60_000,
      env: { ...process.env, GIT_TERMINAL_PROMPT: '0' },
    });

    const build = join(source, 'build');
    const generator = hasTool('ninja') ? ['-G', 'Ninja'] : [];
    progress(`cmake configure${generator.length ? ' (Ninja)' : ''} (${elapsed()})`);
    await runTool('cmake', ['-S', source, '-B', build, ...generator, ...CMAKE_FLAGS], {
      timeoutMs: 5 * 60_000,
    });

    const jobs = options.jobs ?? availableParallelism();
    progress(`cmake --build --target llama-server -j ${jobs} (a few minutes) (${elapsed()})`);
    let lastDecile = 0;
    await runTool('cmake', ['--build', build, '--target', 'llama-server', '-j', String(jobs)], {
      timeoutMs: 60 * 60_000,
      onLine: (line) => {
        // Ninja and make both print "[step/total]"-style counters; report every 10%.
        const m = /^\[\s*(\d+)\/(\d+)\]/.exec(line);
        if (!m) return;
        const decile = Math.floor((10 * Number(m[1])) / Number(m[2]));
        if (decile > lastDecile) {
          lastDecile = decile;
          progress(`compiled ${decile * 10}% (${elapsed()})`);
        }
      },
    });

    const built = join(build, 'bin', 'llama-server');
    if (!existsSync(built)) throw new Error(`the build finished but produced no ${built}`);
    // Copy under a temporary name, then rename: a concurrent reader never sees half a binary.
    await mkdir(dirname(binary), { recursive: true });
    const temp = `${binary}.tmp-${process.pid}`;
    await copyFile(built, temp);
    await chmod(temp, 0o755);
    await rename(temp, binary);
    if (!llamaServerWorks(binary)) throw new Error(`the built ${binary} does not run (--version failed)`);
    progress(`llama-server ready at ${binary} (${elapsed()})`);
    return binary;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
