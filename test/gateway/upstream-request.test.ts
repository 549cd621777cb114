import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, describe, it } from 'node:test';
import { Pool } from 'undici';
import { lostConnection, requestResending } from '../../src/gateway/upstream-request.ts';

const closers: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const c of closers.reverse()) await c();
});

/**
 * A server that drops the connection of its first `drop` requests without a word (after `beforeDrop`),
 * then answers "ok".
 */
async function dropping(
  drop: number,
  beforeDrop: () => void = () => {},
): Promise<{ pool: Pool; requests: () => number }> {
  let requests = 0;
  const server: Server = createServer((req, res) => {
    requests++;
    if (requests <= drop) {
      beforeDrop();
      req.socket.destroy();
      return;
    }
    res.end('ok');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  const pool = new Pool(`http://127.0.0.1:${port}`);
  closers.push(async () => {
    await pool.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  return { pool, requests: () => requests };
}

const post = { path: '/', method: 'POST' as const, body: '{}' };

describe('requestResending', () => {
  it('sends a request once more when its connection was lost before any answer', async () => {
    const { pool, requests } = await dropping(1);
    let resent = 0;
    const res = await requestResending(pool, post, () => resent++);
    assert.equal(await res.body.text(), 'ok');
    assert.equal(resent, 1);
    assert.equal(requests(), 2);
  });

  it('a second loss is thrown as it came', async () => {
    const { pool, requests } = await dropping(2);
    let resent = 0;
    await assert.rejects(
      requestResending(pool, post, () => resent++),
      (e) => lostConnection(e),
    );
    assert.equal(resent, 1);
    assert.equal(requests(), 2);
  });

  it('a request whose caller gave up meanwhile is not sent again', async () => {
    // A signal that reads aborted without telling undici, so that the loss, not an abort error, is
    // what comes back: only the guard keeps it from being sent again.
    const signal = { aborted: false, addEventListener() {}, removeEventListener() {} };
    const { pool, requests } = await dropping(1, () => {
      signal.aborted = true;
    });
    let resent = 0;
    await assert.rejects(
      requestResending(pool, { ...post, signal: signal as unknown as AbortSignal }, () => resent++),
      (e) => lostConnection(e),
    );
    assert.equal(resent, 0);
    assert.equal(requests(), 1);
  });

  it('a refused connection is not a lost one', async () => {
    // A port that was just free: nothing listens there now.
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as { port: number };
    await new Promise((r) => server.close(r));
    const refused = new Pool(`http://127.0.0.1:${port}`);
    closers.push(() => refused.close());
    let resent = 0;
    await assert.rejects(
      requestResending(refused, post, () => resent++),
      (e) => !lostConnection(e),
    );
    assert.equal(resent, 0);
  });
});
