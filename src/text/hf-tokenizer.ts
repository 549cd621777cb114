import { readFile, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Template } from '@huggingface/jinja';
import { Tokenizer } from '@huggingface/tokenizers';
import type { Tokens } from '../core/types.ts';
import { type ChatMessage, renderChat } from './chat-template.ts';
import type { PromptInput, PromptTokenizer } from './prompt-tokenizer.ts';

/** An `hf:PATH` tokenizer; `chatTemplateFile` says where chats get their template from. */
export interface HfPromptTokenizer extends PromptTokenizer {
  /**
   * The file the model's chat template was read from (`chat_template.jinja`, `chat_template.json` or
   * `tokenizer_config.json`), or undefined when the model ships none: chats are then rendered with
   * `renderChat` (the ChatML-like default of `preble engine`) and encoded without special tokens.
   */
  readonly chatTemplateFile: string | undefined;
  /** The prompt text a chat becomes (what tokenize encodes for it), for logs and tests. */
  render(messages: readonly ChatMessage[]): string;
}

type Json = Record<string, unknown>;

const PATH_HINT = 'hf:PATH wants a directory holding tokenizer.json, or a tokenizer.json';

// The special tokens HF's apply_chat_template passes to the template (its special_tokens_map).
const SPECIAL_TOKENS = [
  'bos_token',
  'eos_token',
  'unk_token',
  'sep_token',
  'pad_token',
  'cls_token',
  'mask_token',
];

/**
 * Loads a Hugging Face tokenizer for `hf:PATH`: PATH is a directory holding `tokenizer.json` (with
 * optional `tokenizer_config.json`, `chat_template.jinja`, `chat_template.json`) or the path of a
 * `tokenizer.json` (the other files are looked for beside it). Tokenizes as vLLM does: completions
 * are encoded with the tokenizer's special tokens (BOS for llama-style ones); chats are rendered
 * with the chat template and encoded without adding special tokens again, since the template writes
 * the BOS itself when the model wants one. Throws one-line errors naming the offending file.
 */
export async function loadHfTokenizer(path: string): Promise<HfPromptTokenizer> {
  const { dir, tokenizerFile } = await locate(path);
  const tokenizerJson = parseJson(tokenizerFile, await readRequired(tokenizerFile));
  const configFile = join(dir, 'tokenizer_config.json');
  const configText = await readOptional(configFile);
  const config = configText === undefined ? {} : parseJson(configFile, configText);

  const specials = specialTokens(config);
  const tokenizer = makeTokenizer(tokenizerFile, tokenizerJson, { ...config, ...specials });
  const encode = (text: string, addSpecialTokens: boolean): Tokens =>
    new Uint32Array(tokenizer.encode(text, { add_special_tokens: addSpecialTokens }).ids);

  const found = await findChatTemplate(dir, config, configFile);
  const render = found === undefined ? renderChat : compileTemplate(found.file, found.source, specials);
  return {
    name: `hf:${path}`,
    chatTemplateFile: found?.file,
    render,
    async tokenize(input: PromptInput): Promise<Tokens> {
      return input.kind === 'chat' ? encode(render(input.messages), false) : encode(input.prompt, true);
    },
  };
}

async function locate(path: string): Promise<{ dir: string; tokenizerFile: string }> {
  const info = await stat(path).catch((e: unknown) => {
    throw new Error(`${path}: ${ioReason(e)} (${PATH_HINT})`);
  });
  return info.isDirectory()
    ? { dir: path, tokenizerFile: join(path, 'tokenizer.json') }
    : { dir: dirname(path), tokenizerFile: path };
}

async function readOptional(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`${file}: ${ioReason(e)}`);
  }
}

async function readRequired(file: string): Promise<string> {
  const text = await readOptional(file);
  if (text === undefined) throw new Error(`${file}: no such file (${PATH_HINT})`);
  return text;
}

function parseJson(file: string, text: string): Json {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new Error(`${file}: invalid JSON (${oneLine(e)})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error(`${file}: expected a JSON object`);
  }
  return value as Json;
}

/** Config token fields are strings or AddedToken objects `{content, ...}`; templates want strings. */
function specialTokens(config: Json): Json {
  const out: Json = {};
  for (const key of SPECIAL_TOKENS) {
    const token = tokenContent(config[key]);
    if (token !== undefined) out[key] = token;
  }
  const extra = config['additional_special_tokens'];
  if (Array.isArray(extra)) {
    out['additional_special_tokens'] = extra.map(tokenContent).filter((t) => t !== undefined);
  }
  return out;
}

function tokenContent(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && value !== null && typeof (value as Json)['content'] === 'string') {
    return (value as Json)['content'] as string;
  }
  return undefined;
}

function makeTokenizer(file: string, json: Json, config: Json): Tokenizer {
  if (typeof json['model'] !== 'object' || json['model'] === null) {
    throw new Error(`${file}: not a tokenizer.json (no "model" object)`);
  }
  // The library insists on every component key and on added_tokens; tokenizer.json files may omit them.
  const full = {
    normalizer: null,
    pre_tokenizer: null,
    post_processor: null,
    decoder: null,
    added_tokens: [],
    ...json,
  };
  try {
    return new Tokenizer(full, config);
  } catch (e) {
    throw new Error(`${file}: cannot build the tokenizer (${oneLine(e)})`);
  }
}

async function findChatTemplate(
  dir: string,
  config: Json,
  configFile: string,
): Promise<{ file: string; source: string } | undefined> {
  // transformers' order: a chat_template.jinja beside the tokenizer wins over the config's template.
  const jinjaFile = join(dir, 'chat_template.jinja');
  const jinja = await readOptional(jinjaFile);
  if (jinja !== undefined) return { file: jinjaFile, source: jinja };
  const jsonFile = join(dir, 'chat_template.json');
  const jsonText = await readOptional(jsonFile);
  if (jsonText !== undefined) {
    const source = pickTemplate(jsonFile, parseJson(jsonFile, jsonText)['chat_template']);
    if (source === undefined) throw new Error(`${jsonFile}: no "chat_template" in it`);
    return { file: jsonFile, source };
  }
  const source = pickTemplate(configFile, config['chat_template']);
  return source === undefined ? undefined : { file: configFile, source };
}

/** A template is a string, or a list of `{name, template}` (or a name→template map) of which `default` is used. */
function pickTemplate(file: string, value: unknown): string | undefined {
  if (value === undefined || value === null || typeof value === 'string') return value ?? undefined;
  const named = Array.isArray(value)
    ? value.find((t: Json) => t?.['name'] === 'default')?.['template']
    : (value as Json)['default'];
  if (typeof named !== 'string') throw new Error(`${file}: chat_template has no "default" template`);
  return named;
}

function compileTemplate(
  file: string,
  source: string,
  specials: Json,
): (messages: readonly ChatMessage[]) => string {
  let template: Template;
  try {
    template = new Template(source);
  } catch (e) {
    throw new Error(`${file}: invalid chat template (${oneLine(e)})`);
  }
  // No raise_exception here: the library declares its own global (throwing Error(message), as HF's
  // does) and refuses to have it redeclared ("Variable already declared").
  const render = (messages: readonly ChatMessage[]): string =>
    template.render({ ...specials, messages, add_generation_prompt: true });
  // Render a trivial chat now so that a template this Jinja cannot run fails at startup, not per request;
  // a template with raise_exception may legitimately refuse it, so those only fail per request.
  try {
    render([{ role: 'user', content: 'hello' }]);
  } catch (e) {
    if (!source.includes('raise_exception')) {
      throw new Error(`${file}: chat template does not render (${oneLine(e)})`);
    }
  }
  return (messages) => {
    try {
      return render(messages);
    } catch (e) {
      throw new Error(`chat template ${file}: ${oneLine(e)}`);
    }
  };
}

function ioReason(e: unknown): string {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file or directory';
  if (code === 'EACCES') return 'permission denied';
  if (code === 'EISDIR') return 'is a directory';
  return oneLine(e);
}

function oneLine(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).replace(/\s*\n\s*/g, ' ').trim();
}
