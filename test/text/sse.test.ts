import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { type SseEvent, SseSplitter } from '../../src/text/sse.ts';

/** The events of `input` pushed in pieces cut at `cuts` (positions, any order, repeats allowed). */
function cutAndSplit<T extends string | Uint8Array>(input: T, cuts: readonly number[]) {
  const points = [...new Set(cuts)].sort((a, b) => a - b);
  const splitter = new SseSplitter();
  const events: SseEvent[] = [];
  let at = 0;
  for (const p of [...points, input.length]) {
    events.push(...splitter.push(input.slice(at, p) as T));
    at = p;
  }
  return { events, rest: splitter.rest };
}

const cutsOf = (length: number) => fc.array(fc.integer({ min: 1, max: length - 1 }), { maxLength: 8 });

test('SSE events come out whole however the stream is cut', () => {
  const stream = 'data: {"a":1}\n\ndata: {"b":2}\n\n: comment\n\ndata: [DONE]\n\n';
  fc.assert(
    fc.property(cutsOf(stream.length), (cuts) => {
      const { events, rest } = cutAndSplit(stream, cuts);
      assert.deepEqual(
        events.map((e) => e.data),
        ['{"a":1}', '{"b":2}', '', '[DONE]'],
      );
      assert.equal(events.map((e) => e.raw).join(''), stream);
      assert.equal(rest, '');
    }),
  );
});

test('a multi-byte character cut between two chunks comes out whole', () => {
  // Bytes, not characters: a replica's chunk may end inside a UTF-8 sequence (é, 漢, an emoji).
  const bytes = Buffer.from('data: {"t":"é漢😀"}\n\ndata: [DONE]\n\n', 'utf8');
  fc.assert(
    fc.property(cutsOf(bytes.length), (cuts) => {
      assert.deepEqual(
        cutAndSplit(new Uint8Array(bytes), cuts).events.map((e) => e.data),
        ['{"t":"é漢😀"}', '[DONE]'],
      );
    }),
  );
});
