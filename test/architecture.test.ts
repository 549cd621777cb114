import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { test } from 'node:test';

/** The layers of docs/architecture.md: each folder of src/ and the folders it may import. */
const ALLOWED: Record<string, readonly string[]> = {
  core: [],
  util: [],
  report: [],
  engine: ['core'],
  runtime: ['core', 'engine'],
  workloads: ['core'],
  text: ['core'],
  real: ['core', 'util'],
  sim: ['core', 'engine', 'runtime', 'workloads', 'report'],
  emulator: ['core', 'engine', 'runtime', 'text', 'util'],
  gateway: ['core', 'text', 'util', 'search', 'workloads'],
  search: ['core', 'util', 'sim', 'workloads', 'report'],
  experiments: ['core', 'sim', 'search', 'workloads', 'report'],
  bench: ['core', 'gateway', 'workloads', 'text', 'report', 'util'],
  demo: ['core', 'bench', 'emulator', 'gateway', 'real', 'workloads', 'report'],
  cli: [
    'core',
    'util',
    'report',
    'engine',
    'workloads',
    'text',
    'real',
    'runtime',
    'sim',
    'emulator',
    'gateway',
    'search',
    'experiments',
    'bench',
    'demo',
  ],
};

const src = join(import.meta.dirname, '..', 'src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

test('every import stays within the layers docs/architecture.md lists', () => {
  const folders = readdirSync(src, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name);
  assert.deepEqual(
    folders.sort(),
    Object.keys(ALLOWED).sort(),
    'a folder of src/ is missing from the layers',
  );
  const crossings: string[] = [];
  for (const file of sources(src)) {
    const from = relative(src, file).split('/')[0]!;
    for (const match of readFileSync(file, 'utf8').matchAll(/from '(\.[^']+)'|import\('(\.[^']+)'\)/g)) {
      const target = relative(src, normalize(join(dirname(file), match[1] ?? match[2]!))).split('/')[0]!;
      if (target !== from && !ALLOWED[from]!.includes(target))
        crossings.push(`${relative(src, file)} -> ${target}`);
    }
  }
  assert.deepEqual(crossings, []);
});

test('the core does no I/O and keeps no clock', () => {
  const impure: string[] = [];
  for (const file of sources(join(src, 'core'))) {
    const text = readFileSync(file, 'utf8');
    if (/from 'node:|Date\.now\(|performance\.now\(|setTimeout\(|setInterval\(|process\./.test(text)) {
      impure.push(relative(src, file));
    }
  }
  assert.deepEqual(impure, []);
});
