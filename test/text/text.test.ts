import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { decodeChars, encodeChars } from '../../src/text/chars-tokenizer.ts';
import { renderChat } from '../../src/text/chat-template.ts';

test('chars tokenizer round-trips any text and keeps shared prefixes as shared tokens', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), (a, b) => {
      assert.equal(decodeChars(encodeChars(a)), a);
      const ta = encodeChars(a + b);
      const tb = encodeChars(a);
      assert.deepEqual(Array.from(ta.subarray(0, tb.length)), Array.from(tb));
    }),
  );
  assert.deepEqual(Array.from(encodeChars('a😀')), [97, 0x1f600]);
});

test('chat prompts with the same system prompt and history share that prefix', () => {
  const system = { role: 'system', content: 'You are a tool-using assistant.' };
  const a = renderChat([system, { role: 'user', content: 'first question' }]);
  const b = renderChat([system, { role: 'user', content: 'second question' }]);
  const common = renderChat([system]).replace(/<\|im_start\|>assistant\n$/, '');
  assert.ok(a.startsWith(common) && b.startsWith(common));
  assert.ok(a.endsWith('<|im_start|>assistant\n'));
});
