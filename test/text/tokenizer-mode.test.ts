import assert from 'node:assert/strict';
import { homedir } from 'node:os';
import { test } from 'node:test';
import fc from 'fast-check';
import { charsTokenizer, encodeChars } from '../../src/text/chars-tokenizer.ts';
import { renderChat } from '../../src/text/chat-template.ts';
import { loadLocalTokenizer, parseTokenizerMode } from '../../src/text/tokenizer-mode.ts';

test('tokenizer specs parse to their modes', () => {
  assert.deepEqual(parseTokenizerMode('chars'), { mode: 'chars' });
  assert.deepEqual(parseTokenizerMode('backend'), { mode: 'backend' });
  assert.deepEqual(parseTokenizerMode('hf:models/llama'), { mode: 'hf', path: 'models/llama' });
  assert.deepEqual(parseTokenizerMode('hf:/abs/tokenizer.json'), { mode: 'hf', path: '/abs/tokenizer.json' });
  assert.deepEqual(parseTokenizerMode('hf:~/models/x'), { mode: 'hf', path: `${homedir()}/models/x` });
});

test('other specs are refused in one line', () => {
  for (const spec of ['', 'char', 'CHARS', 'hf', 'hf:', 'tiktoken:cl100k', 'backend:x']) {
    assert.throws(
      () => parseTokenizerMode(spec),
      (e: unknown) => e instanceof Error && !e.message.includes('\n') && /hf:/.test(e.message),
    );
  }
});

test('loadLocalTokenizer gives chars and hf tokenizers, and leaves backend to the gateway', async () => {
  assert.equal(await loadLocalTokenizer('chars'), charsTokenizer);
  assert.equal(await loadLocalTokenizer({ mode: 'backend' }), undefined);
  // hf: a thread pool by default (to be closed), all inline with threads: 0.
  for (const threads of [undefined, 1, 0]) {
    const hf = await loadLocalTokenizer(
      'hf:test/fixtures/hf-tokenizer',
      threads === undefined ? {} : { threads },
    );
    try {
      assert.equal(hf?.name, 'hf:test/fixtures/hf-tokenizer');
      assert.equal(hf?.close === undefined, threads === 0);
      if (threads === 1) assert.equal((hf as { threads?: number }).threads, 1);
      assert.deepEqual(
        Array.from((await hf?.tokenize({ kind: 'completions', prompt: 'hello' })) ?? []),
        [1000, 259],
      );
    } finally {
      await hf?.close?.();
    }
  }
  await assert.rejects(
    loadLocalTokenizer('hf:test/fixtures/nowhere'),
    /test\/fixtures\/nowhere: no such file/,
  );
});

test('the chars tokenizer encodes prompts and renderChat-rendered chats code point by code point', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.string({ unit: 'grapheme' }),
      fc.string({ unit: 'grapheme' }),
      async (system, user) => {
        const messages = [
          { role: 'system', content: system },
          { role: 'user', content: user },
        ];
        assert.deepEqual(
          await charsTokenizer.tokenize({ kind: 'chat', messages }),
          encodeChars(renderChat(messages)),
        );
        assert.deepEqual(
          await charsTokenizer.tokenize({ kind: 'completions', prompt: user }),
          encodeChars(user),
        );
      },
    ),
  );
  assert.equal(charsTokenizer.name, 'chars');
});
