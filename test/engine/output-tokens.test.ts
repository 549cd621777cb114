import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OUTPUT_TOKEN_BIT, outputToken, promptHash, withOutputs } from '../../src/engine/output-tokens.ts';
import { seq } from './helpers.ts';

describe('synthetic output tokens', () => {
  it('depend only on the prompt, never collide with vocabulary ids, and extend the prompt', () => {
    const prompt = seq(50, 1);
    const h = promptHash(prompt);
    assert.equal(h, promptHash(seq(50, 1)));
    assert.notEqual(h, promptHash(seq(50, 2)));
    const ids = Array.from({ length: 100 }, (_, j) => outputToken(h, j));
    assert.ok(ids.every((id) => id >= OUTPUT_TOKEN_BIT && id <= 0xffffffff));
    assert.equal(new Set(ids).size, 100);
    const full = withOutputs(prompt, h, 3);
    assert.deepEqual(full.subarray(0, 50), prompt);
    assert.deepEqual([...full.subarray(50)], ids.slice(0, 3));
  });
});
