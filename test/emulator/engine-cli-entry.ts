// A stand-in for src/cli/main.ts: `preble engine` on a fresh program, with main's error handling.
import { Command, CommanderError } from 'commander';
import { registerEngine } from '../../src/cli/engine.ts';

const program = new Command('preble').exitOverride();
registerEngine(program);
try {
  await program.parseAsync(process.argv);
  process.exitCode = 0;
} catch (error) {
  if (error instanceof CommanderError) process.exitCode = error.exitCode;
  else {
    process.stderr.write(`preble: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}
