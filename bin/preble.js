#!/usr/bin/env node
// The `preble` command. It runs the compiled dist/ when that is at least as new as every file and
// folder under src/ (a few hundred stat calls), and otherwise the TypeScript sources through tsx, so a
// stale build never answers; an installed package ships only dist/ and runs that. `npm run build`
// (also run by `npm install` and before the tests) brings dist/ up to date.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const sourceDir = join(root, 'src');
const source = join(sourceDir, 'cli', 'main.ts');
const built = join(root, 'dist', 'cli', 'main.js');

/** The newest modification time under `dir`, folders included (an added, removed or renamed file changes its folder's). */
function newest(dir) {
  let t = statSync(dir).mtimeMs;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) t = Math.max(t, newest(path));
    else if (entry.isFile()) t = Math.max(t, statSync(path).mtimeMs);
  }
  return t;
}

function builtIsFresh() {
  if (!existsSync(built)) return false;
  if (!existsSync(source)) return true;
  try {
    return statSync(built).mtimeMs >= newest(sourceDir);
  } catch {
    return false; // a file vanished under the walk: an edit in progress
  }
}

// npm (npx preble, npm run ...) runs this through `sh -c`; a signal to npm is passed to that shell,
// which dies of it without passing it on. Name the parent to watch: once it is gone, the command
// stops as on SIGTERM (src/util/child-group.ts, watchParent), so killing npx stops the engine too.
if (process.env.npm_lifecycle_event !== undefined) process.env.PREBLE_PARENT_PID = String(process.ppid);

if (builtIsFresh()) {
  await import(pathToFileURL(built).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(source).href);
}
