import assert from 'node:assert/strict';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import fc from 'fast-check';
import { renderChat } from '../../src/text/chat-template.ts';
import { loadHfTokenizer } from '../../src/text/hf-tokenizer.ts';
import type { PromptTokenizer } from '../../src/text/prompt-tokenizer.ts';

// The fixture is a tiny llama-3-like byte-level BPE: byte b has id b, merges give hello=259,
// Ġworld=264, user=267, and the specials are <|begin_of_text|>=1000 ... <|eot_id|>=1004. Its
// tokenizer_config.json holds Llama 3's chat template (plus a raise_exception on unknown roles)
// and an eos_token written as an AddedToken object.
const FIXTURE = 'test/fixtures/hf-tokenizer';
const BOS = 1000;
const EOT = 1004;

const scratch = await mkdtemp(join(tmpdir(), 'preble-hf-'));
after(() => rm(scratch, { recursive: true, force: true }));
let dirs = 0;

/** A directory holding the fixture's tokenizer.json plus the given files. */
async function modelDir(files: Record<string, string>): Promise<string> {
  const dir = join(scratch, `m${dirs++}`);
  await mkdir(dir);
  await copyFile(join(FIXTURE, 'tokenizer.json'), join(dir, 'tokenizer.json'));
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  return dir;
}

const ids = async (t: PromptTokenizer, prompt: string) =>
  Array.from(await t.tokenize({ kind: 'completions', prompt }));

test('completions encode known strings with BOS in front', async () => {
  const t = await loadHfTokenizer(FIXTURE);
  assert.equal(t.name, `hf:${FIXTURE}`);
  assert.deepEqual(await ids(t, 'hello world'), [BOS, 259, 264]);
  assert.deepEqual(await ids(t, 'Hello world!'), [BOS, 72, 101, 257, 111, 264, 33]);
  assert.deepEqual(await ids(t, 'ï'), [BOS, 0xc3, 0xaf]); // UTF-8 bytes, as byte-level BPE sees them
  assert.deepEqual(await ids(t, 'user<|eot_id|>'), [BOS, 267, EOT]); // added tokens are matched in text
});

test('completions carry exactly one BOS, whatever the prompt', async () => {
  const t = await loadHfTokenizer(FIXTURE);
  await fc.assert(
    fc.asyncProperty(fc.string({ unit: 'grapheme' }), async (prompt) => {
      const tokens = await ids(t, prompt);
      assert.equal(tokens[0], BOS);
      assert.equal(tokens.filter((id) => id === BOS).length, 1);
    }),
  );
});

test('chats render the model template and are encoded without a second BOS', async () => {
  const t = await loadHfTokenizer(FIXTURE);
  assert.equal(t.chatTemplateFile, join(FIXTURE, 'tokenizer_config.json'));
  const messages = [
    { role: 'system', content: 'be brief ' },
    { role: 'user', content: 'hello world' },
  ];
  assert.equal(
    t.render(messages),
    '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nbe brief<|eot_id|>' +
      '<|start_header_id|>user<|end_header_id|>\n\nhello world<|eot_id|>' +
      '<|start_header_id|>assistant<|end_header_id|>\n\n',
  );
  const tokens = Array.from(await t.tokenize({ kind: 'chat', messages }));
  assert.equal(tokens[0], BOS);
  assert.equal(tokens.filter((id) => id === BOS).length, 1);
  // user header, "\n\n", hello, Ġworld, <|eot_id|> appear as such.
  assert.ok(tokens.join(',').includes([1002, 267, 1003, 10, 10, 259, 264, EOT].join(',')));
});

test('chats sharing a system prompt share its tokens as a prefix', async () => {
  const t = await loadHfTokenizer(FIXTURE);
  const text = fc.string({ unit: 'grapheme', maxLength: 40 });
  await fc.assert(
    fc.asyncProperty(text, text, text, async (system, a, b) => {
      const chat = (user: string) => [
        { role: 'system', content: system },
        { role: 'user', content: user },
      ];
      const ta = Array.from(await t.tokenize({ kind: 'chat', messages: chat(a) }));
      const tb = Array.from(await t.tokenize({ kind: 'chat', messages: chat(b) }));
      // The system turn ends at the first <|eot_id|>; everything up to it is the shared prefix.
      const end = ta.indexOf(EOT) + 1;
      assert.ok(end > 0);
      assert.deepEqual(tb.slice(0, end), ta.slice(0, end));
      assert.deepEqual(ta.slice(0, 2), [BOS, 1002]);
    }),
  );
});

test('a directory and the path of its tokenizer.json load the same tokenizer', async () => {
  const byDir = await loadHfTokenizer(FIXTURE);
  const byFile = await loadHfTokenizer(join(FIXTURE, 'tokenizer.json'));
  assert.equal(byFile.chatTemplateFile, byDir.chatTemplateFile);
  const chat = { kind: 'chat', messages: [{ role: 'user', content: 'hello' }] } as const;
  assert.deepEqual(await byFile.tokenize(chat), await byDir.tokenize(chat));
  assert.deepEqual(await ids(byFile, 'hello world'), await ids(byDir, 'hello world'));
});

test('without a chat template, chats fall back to renderChat (and no BOS is added)', async () => {
  const dir = await modelDir({});
  const t = await loadHfTokenizer(join(dir, 'tokenizer.json'));
  assert.equal(t.chatTemplateFile, undefined);
  const messages = [{ role: 'user', content: 'hello' }];
  assert.equal(t.render(messages), renderChat(messages));
  const tokens = Array.from(await t.tokenize({ kind: 'chat', messages }));
  assert.equal(tokens.includes(BOS), false);
  assert.deepEqual(tokens.slice(0, 3), [60, 124, 105]); // '<|i' of '<|im_start|>', plain text here
  assert.deepEqual(await ids(t, 'hello'), [BOS, 259]); // completions still get BOS from tokenizer.json
});

test('chat_template.jinja wins over the config; eos_token objects reach the template as strings', async () => {
  const config = await readFile(join(FIXTURE, 'tokenizer_config.json'), 'utf8');
  const dir = await modelDir({
    'tokenizer_config.json': config,
    'chat_template.jinja':
      "{% for m in messages %}{{ m['role'] + ': ' + m['content'] + eos_token }}{% endfor %}\n",
  });
  const t = await loadHfTokenizer(dir);
  assert.equal(t.chatTemplateFile, join(dir, 'chat_template.jinja'));
  const messages = [{ role: 'user', content: 'hello' }];
  assert.equal(t.render(messages), 'user: hello<|eot_id|>');
  assert.deepEqual(Array.from(await t.tokenize({ kind: 'chat', messages })), [267, 58, 32, 259, EOT]);
});

test('chat_template.json and named templates in the config are read', async () => {
  const fromJson = await loadHfTokenizer(
    await modelDir({ 'chat_template.json': JSON.stringify({ chat_template: '{{ bos_token }}json' }) }),
  );
  assert.equal(fromJson.render([]), 'json'); // no config, so no bos_token
  const named = await loadHfTokenizer(
    await modelDir({
      'tokenizer_config.json': JSON.stringify({
        bos_token: { content: '<|begin_of_text|>' },
        chat_template: [
          { name: 'tool_use', template: 'tools' },
          { name: 'default', template: '{{ bos_token }}default' },
        ],
      }),
    }),
  );
  assert.equal(named.render([]), '<|begin_of_text|>default');
});

test('bad paths and files give one-line errors naming the file', async () => {
  const rejects = async (load: Promise<unknown>, file: string, why: RegExp) => {
    await assert.rejects(load, (e: unknown) => {
      assert.ok(e instanceof Error);
      assert.ok(e.message.includes(file), `${e.message} names ${file}`);
      assert.match(e.message, why);
      assert.doesNotMatch(e.message, /\n/);
      return true;
    });
  };
  const missing = join(scratch, 'nowhere');
  await rejects(loadHfTokenizer(missing), missing, /no such file or directory/);
  const empty = join(scratch, 'empty');
  await mkdir(empty);
  await rejects(loadHfTokenizer(empty), join(empty, 'tokenizer.json'), /no such file/);

  const badJson = join(scratch, 'bad.json');
  await writeFile(badJson, '{"model": ');
  await rejects(loadHfTokenizer(badJson), badJson, /invalid JSON/);
  const noModel = join(scratch, 'no-model.json');
  await writeFile(noModel, '{"added_tokens": []}');
  await rejects(loadHfTokenizer(noModel), noModel, /no "model"/);
  const oddModel = join(scratch, 'odd-model.json');
  await writeFile(oddModel, '{"model": {"type": "Quantum"}}');
  await rejects(loadHfTokenizer(oddModel), oddModel, /cannot build the tokenizer/);

  const cases: [string, string, RegExp][] = [
    ['tokenizer_config.json', '{"bos_token": "<s>",}', /invalid JSON/],
    [
      'tokenizer_config.json',
      '{"chat_template": "{% for m in messages %}{{ m.content }"}',
      /invalid chat template/,
    ],
    ['tokenizer_config.json', '{"chat_template": [{"name": "tool_use", "template": "x"}]}', /no "default"/],
    ['chat_template.jinja', '{{ messages | frobnicate }}', /does not render/],
    ['chat_template.json', '{"template": "x"}', /no "chat_template"/],
  ];
  for (const [name, text, why] of cases) {
    const dir = await modelDir({ [name]: text });
    await rejects(loadHfTokenizer(dir), join(dir, name), why);
  }
});

test("a template's raise_exception rejects that chat only, in one line", async () => {
  const t = await loadHfTokenizer(FIXTURE);
  await assert.rejects(
    t.tokenize({ kind: 'chat', messages: [{ role: 'tool', content: 'x' }] }),
    /^Error: chat template .*tokenizer_config\.json: Unknown role: tool$/,
  );
});
