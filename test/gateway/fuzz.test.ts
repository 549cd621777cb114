import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { request } from 'undici';
import { type Engine, MODEL, startEngine, startGateway } from './helpers.ts';

let engine: Engine;
let gw: Awaited<ReturnType<typeof startGateway>>;
before(async () => {
  engine = await startEngine();
  gw = await startGateway([engine.url], {
    auth: { keys: [{ name: 'k', key: 'fuzz-key-0123456789abcdef' }] },
    limits: { bodyBytes: 64 * 1024 },
  });
});
after(async () => {
  await gw.gateway.close();
  await engine.server.close(0);
});

/** A plausible body with any field replaced by anything: what a buggy client sends. */
/** A plausible body with any field replaced by anything (1 in 5): what a buggy client sends. */
const mostly = <T>(good: fc.Arbitrary<T>) => fc.oneof({ weight: 4, arbitrary: good }, fc.anything());
const mutatedBody = fc
  .record(
    {
      model: mostly(fc.constant(MODEL)),
      prompt: mostly(fc.string({ maxLength: 200 })),
      messages: mostly(
        fc.array(fc.record({ role: mostly(fc.constant('user')), content: mostly(fc.string()) }), {
          maxLength: 3,
        }),
      ),
      max_tokens: mostly(
        fc.oneof(
          { weight: 4, arbitrary: fc.integer({ min: 1, max: 16 }) },
          fc.integer({ min: -5, max: 40_000 }),
        ),
      ),
      stream: mostly(fc.boolean()),
      stream_options: mostly(fc.constant({ include_usage: true })),
    },
    { requiredKeys: ['model', 'prompt', 'messages'] },
  )
  .map((b) => JSON.stringify(b));

const bodyArb = fc.oneof(
  { weight: 6, arbitrary: mutatedBody },
  fc.json({ maxDepth: 3 }),
  fc.string({ maxLength: 300 }),
  fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b).toString('latin1')),
);
const pathArb = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('/v1/completions', '/v1/chat/completions') },
  fc.constantFrom(
    '/v1/completions',
    '/v1/chat/completions',
    '/v1/models',
    '/health',
    '/metrics',
    '/admin/replicas',
    '/v1/completions/',
    '/v1//completions',
  ),
  fc.webPath(),
  fc.string({ maxLength: 40 }).map((s) => `/${encodeURIComponent(s)}`),
);
const headerValue = fc.string({ maxLength: 60 }).filter((s) => /^[\x20-\x7e]*$/.test(s));
const headersArb = fc.record(
  {
    'content-type': fc.oneof(
      { weight: 6, arbitrary: fc.constant('application/json') },
      fc.constantFrom(
        'application/json',
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data',
      ),
      headerValue,
    ),
    authorization: fc.oneof(
      { weight: 6, arbitrary: fc.constant('Bearer fuzz-key-0123456789abcdef') },
      headerValue.map((v) => `Bearer ${v}`),
      headerValue,
    ),
    accept: headerValue,
    'x-forwarded-for': headerValue,
  },
  { requiredKeys: ['authorization'] },
);

test('fuzzed bodies, headers, paths and methods: every answer is a well-formed 2xx or 4xx, never a 5xx or a crash', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        { weight: 6, arbitrary: fc.constant('POST') },
        fc.constantFrom('GET', 'PUT', 'DELETE', 'PATCH'),
      ),
      pathArb,
      headersArb,
      bodyArb,
      async (method, path, headers, body) => {
        const res = await request(`${gw.url}${path}`, {
          method,
          headers,
          ...(method === 'GET' ? {} : { body }),
        });
        const text = await res.body.text();
        assert.ok(res.statusCode < 500, `${method} ${path} -> ${res.statusCode} ${text}`);
        if (res.statusCode >= 400) {
          const json = JSON.parse(text) as { error?: { message?: unknown; type?: unknown } };
          assert.equal(typeof json.error?.message, 'string', text);
          assert.equal(typeof json.error?.type, 'string', text);
        }
      },
    ),
    { numRuns: 300 },
  );
  assert.equal(gw.gateway.active, 0);
});
