import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import fc from 'fast-check';
import { benchPrompt } from '../../src/bench/gateway-load.ts';
import type { ChatMessage } from '../../src/text/chat-template.ts';
import { loadHfTokenizer } from '../../src/text/hf-tokenizer.ts';
import { loadPooledHfTokenizer, promptChars } from '../../src/text/hf-tokenizer-pool.ts';
import type { PromptInput } from '../../src/text/prompt-tokenizer.ts';

// The hand-made llama-3-like BPE of test/hf-tokenizer.test.ts, with its Llama 3 chat template.
const FIXTURE = 'test/fixtures/hf-tokenizer';

const inline = await loadHfTokenizer(FIXTURE);
// Every prompt goes to the threads (no inline shortcut), so the properties compare thread against inline.
const pooled = await loadPooledHfTokenizer(FIXTURE, { threads: 2, inlineBelowChars: 0 });
after(() => pooled.close());

const ids = async (t: { tokenize(i: PromptInput): Promise<Uint32Array> }, input: PromptInput) =>
  Array.from(await t.tokenize(input));

test('the pool encodes completions exactly as the inline tokenizer does', async () => {
  const text = fc.oneof(
    fc.string({ unit: 'grapheme' }),
    fc.string({ unit: 'binary' }),
    fc.constantFrom('user<|eot_id|>hello world', '<|begin_of_text|>', ''),
    fc.integer({ min: 1, max: 20_000 }).map(benchPrompt),
  );
  await fc.assert(
    fc.asyncProperty(text, async (prompt) => {
      const input: PromptInput = { kind: 'completions', prompt };
      const got = await pooled.tokenize(input);
      assert.ok(got instanceof Uint32Array);
      assert.deepEqual(Array.from(got), await ids(inline, input));
    }),
  );
});

test('the pool renders and encodes chats exactly as the inline tokenizer does', async () => {
  const message = fc.record({
    role: fc.constantFrom('system', 'user', 'assistant'),
    content: fc.string({ unit: 'grapheme', maxLength: 200 }),
  });
  await fc.assert(
    fc.asyncProperty(fc.array(message, { minLength: 1, maxLength: 5 }), async (messages) => {
      const input: PromptInput = { kind: 'chat', messages };
      assert.deepEqual(await ids(pooled, input), await ids(inline, input));
    }),
  );
});

test('concurrent prompts each get their own ids back', async () => {
  const prompts = Array.from({ length: 16 }, (_, i) => `${i} ${benchPrompt(1000 + 97 * i)}`);
  const got = await Promise.all(prompts.map((prompt) => ids(pooled, { kind: 'completions', prompt })));
  for (const [i, prompt] of prompts.entries())
    assert.deepEqual(got[i], await ids(inline, { kind: 'completions', prompt }));
});

test("a chat template's error in a thread rejects that chat with the inline tokenizer's message", async () => {
  const messages: ChatMessage[] = [{ role: 'tool-x', content: 'hi' }];
  const expected = await inline.tokenize({ kind: 'chat', messages }).then(
    () => assert.fail('the fixture template refuses unknown roles'),
    (e: Error) => e.message,
  );
  await assert.rejects(pooled.tokenize({ kind: 'chat', messages }), (e: unknown) => {
    assert.ok(e instanceof Error);
    assert.equal(e.message, expected);
    return true;
  });
  // The thread is still there for the next prompt.
  assert.deepEqual(await ids(pooled, { kind: 'completions', prompt: 'hello world' }), [1000, 259, 264]);
});

test('the pooled tokenizer keeps the inline one’s name, template and rendering', () => {
  assert.equal(pooled.name, inline.name);
  assert.equal(pooled.chatTemplateFile, inline.chatTemplateFile);
  const messages = [{ role: 'user', content: 'hello' }];
  assert.equal(pooled.render(messages), inline.render(messages));
  assert.equal(pooled.threads, 2);
});

test('prompt size counts a completion prompt, or every role and content of a chat', () => {
  assert.equal(promptChars({ kind: 'completions', prompt: 'abcd' }), 4);
  assert.equal(
    promptChars({
      kind: 'chat',
      messages: [
        { role: 'user', content: 'abc' },
        { role: 'assistant', content: 'de' },
      ],
    }),
    4 + 3 + 9 + 2,
  );
});

test('short prompts stay inline and long ones go to the threads; both give the same ids', async () => {
  const mixed = await loadPooledHfTokenizer(FIXTURE, { threads: 1, inlineBelowChars: 100 });
  try {
    assert.equal(mixed.inlineBelowChars, 100);
    const sent = [
      [benchPrompt(99), 0],
      [benchPrompt(100), 1],
      [benchPrompt(5000), 2],
    ] as const;
    for (const [prompt, offloaded] of sent) {
      const input: PromptInput = { kind: 'completions', prompt };
      assert.deepEqual(await ids(mixed, input), await ids(inline, input));
      assert.equal(mixed.offloaded, offloaded);
    }
    const chat = (content: string): PromptInput => ({ kind: 'chat', messages: [{ role: 'user', content }] });
    assert.deepEqual(await ids(mixed, chat('hello')), await ids(inline, chat('hello')));
    assert.equal(mixed.offloaded, 2);
    assert.deepEqual(await ids(mixed, chat(benchPrompt(200))), await ids(inline, chat(benchPrompt(200))));
    assert.equal(mixed.offloaded, 3);
  } finally {
    await mixed.close();
  }
});

test('close stops every thread, once however often it is called; later prompts are encoded inline', async () => {
  const t = await loadPooledHfTokenizer(FIXTURE, { threads: 3, inlineBelowChars: 0 });
  await t.tokenize({ kind: 'completions', prompt: 'hello' });
  assert.equal(t.liveThreads, 3);
  await Promise.all([t.close(), t.close()]);
  assert.equal(t.liveThreads, 0);
  await t.close();
  assert.deepEqual(await ids(t, { kind: 'completions', prompt: 'hello world' }), [1000, 259, 264]);
});

test('bad thread counts and bad paths are refused before any thread starts', async () => {
  await assert.rejects(loadPooledHfTokenizer(FIXTURE, { threads: 0 }), /at least 1, got 0/);
  await assert.rejects(loadPooledHfTokenizer('test/fixtures/nowhere'), /nowhere: no such file/);
});

test('threads that cannot load the tokenizer fail the load, in one line naming the cause', async () => {
  await assert.rejects(
    loadPooledHfTokenizer(FIXTURE, { threads: 2, threadPath: 'test/fixtures/nowhere' }),
    (e: unknown) => {
      assert.ok(e instanceof Error);
      assert.match(e.message, /^hf:test\/fixtures\/hf-tokenizer: tokenizer threads failed to start \(/);
      assert.match(e.message, /nowhere: no such file/);
      assert.ok(!e.message.includes('\n'));
      return true;
    },
  );
});
