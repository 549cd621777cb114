import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { decode } from '@msgpack/msgpack';
import { Subscriber } from 'zeromq';
import { type PrebleProcess, startPreble } from '../../src/bench/preble-process.ts';
import { encodeChars } from '../../src/text/chars-tokenizer.ts';
import { MODEL, metricValue, postJson } from './helpers.ts';

const stops: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const s of stops.reverse()) await s();
});

async function until<T>(what: string, get: () => T | undefined | Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 1000; i++) {
    const v = await get();
    if (v !== undefined) return v;
    await sleep(10);
  }
  return assert.fail(`never happened: ${what}`);
}

describe('preble engine --kv-events', () => {
  it("publishes BlockStored and BlockRemoved batches in vLLM's wire format", async () => {
    const p: PrebleProcess = await startPreble([
      'engine',
      '--port',
      '0',
      '--time-scale',
      '1000',
      '--kv-tokens',
      '100',
      '--kv-events',
      'tcp://127.0.0.1:0',
    ]);
    stops.push(() => p.stop());
    const endpoint = await until(
      'the KV event endpoint on stderr',
      () => /KV events on (tcp:\/\/\S+)/.exec(p.stderr())?.[1],
    );
    const sub = new Subscriber();
    stops.push(async () => sub.close());
    sub.connect(endpoint);
    sub.subscribe();
    await until('the engine saw the subscriber', async () => {
      const text = await fetch(`${p.url}/metrics`).then((r) => r.text());
      return metricValue(text, 'preble:kv_event_subscribers') >= 1 ? true : undefined;
    });
    const first = 'x'.repeat(64);
    for (const prompt of [first, 'y'.repeat(64)]) {
      const r = await postJson(`${p.url}/v1/completions`, { model: MODEL, prompt, max_tokens: 2 });
      assert.equal(r.status, 200);
    }
    const events: unknown[][] = [];
    let expected = 0n;
    while (!events.some((e) => e[0] === 'BlockRemoved')) {
      const frames = await sub.receive();
      assert.equal(frames.length, 3, '[topic, sequence, payload]');
      assert.equal(frames[0]!.length, 0, 'the default topic is empty');
      assert.equal(frames[1]!.readBigUInt64BE(0), expected++, 'sequence numbers count from 0');
      const batch = decode(frames[2]!, { useBigInt64: true }) as [number, unknown[][]];
      assert.equal(typeof batch[0], 'number', 'ts');
      events.push(...batch[1]);
    }
    const stored = events.find((e) => e[0] === 'BlockStored')!;
    assert.equal(
      stored.length,
      7,
      '[tag, block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium]',
    );
    const [, hashes, parent, tokenIds, blockSize] = stored as [string, bigint[], unknown, number[], number];
    assert.equal(blockSize, 16);
    assert.equal(parent, null);
    assert.equal(hashes.length, 4);
    assert.ok(hashes.every((h) => typeof h === 'bigint'));
    assert.deepEqual(tokenIds, [...encodeChars(first)]);
    const removed = events.find((e) => e[0] === 'BlockRemoved')!;
    for (const h of removed[1] as bigint[])
      assert.ok(hashes.includes(h), 'a removed block of the first prompt');
  });
});
