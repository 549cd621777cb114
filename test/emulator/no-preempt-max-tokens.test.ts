import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MODEL, startServer } from './helpers.ts';

// No-Preempt reserves the client's max_tokens; the emulator must pass it, or the engine falls back to
// the policy's 1,024-token default reserve and cuts longer answers there.
test('preble engine with no-preempt generates max_tokens beyond the default reserve', async () => {
  const running = await startServer({ queuePolicy: 'no-preempt', timeScale: 100_000 });
  try {
    const answer = await running.client.completions.create({
      model: MODEL,
      prompt: 'hello',
      max_tokens: 1500,
    });
    assert.equal(answer.usage?.completion_tokens, 1500);
    assert.equal(answer.choices[0]?.finish_reason, 'length');
  } finally {
    await running.close();
  }
});
