import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { SseSplitter } from '../../src/text/sse.ts';

test('SSE events come out whole however the stream is cut', () => {
  const stream = 'data: {"a":1}\n\ndata: {"b":2}\n\n: comment\n\ndata: [DONE]\n\n';
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 1, max: stream.length - 1 }), { maxLength: 6 }), (cuts) => {
      const points = [...new Set(cuts)].sort((a, b) => a - b);
      const splitter = new SseSplitter();
      const events = [];
      let at = 0;
      for (const p of [...points, stream.length]) {
        events.push(...splitter.push(stream.slice(at, p)));
        at = p;
      }
      assert.deepEqual(
        events.map((e) => e.data),
        ['{"a":1}', '{"b":2}', '', '[DONE]'],
      );
      assert.equal(events.map((e) => e.raw).join(''), stream);
      assert.equal(splitter.rest, '');
    }),
  );
});

test('a multi-byte character cut between two chunks comes out whole', () => {
  // Bytes, not characters: a replica's chunk may end inside a UTF-8 sequence (é, 漢, an emoji).
  const bytes = Buffer.from('data: {"t":"é漢😀"}\n\ndata: [DONE]\n\n', 'utf8');
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 8 }), (cuts) => {
      const points = [...new Set(cuts)].sort((a, b) => a - b);
      const splitter = new SseSplitter();
      const events = [];
      let at = 0;
      for (const p of [...points, bytes.length]) {
        events.push(...splitter.push(bytes.subarray(at, p)));
        at = p;
      }
      assert.deepEqual(
        events.map((e) => e.data),
        ['{"t":"é漢😀"}', '[DONE]'],
      );
    }),
  );
});
