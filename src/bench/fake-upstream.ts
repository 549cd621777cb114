import { createServer, type Server } from 'node:http';

const USAGE = {
  prompt_tokens: 8,
  completion_tokens: 3,
  total_tokens: 11,
  prompt_tokens_details: { cached_tokens: 4 },
};

/**
 * An OpenAI-speaking upstream that answers at once (no model time): what is left of a request's
 * latency through the gateway is the gateway's own cost. Completions only, streamed or not.
 */
export function startFakeUpstream(
  port: number,
  host = '127.0.0.1',
): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => {
      body += d.toString();
    });
    req.on('end', () => {
      const stream = body.includes('"stream":true');
      if (!stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: 'x',
            object: 'text_completion',
            created: 0,
            model: 'm',
            choices: [{ index: 0, text: 'abc', finish_reason: 'length' }],
            usage: USAGE,
          }),
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const t of 'abc') {
        res.write(
          `data: {"id":"x","object":"text_completion","created":0,"model":"m","choices":[{"index":0,"text":"${t}","finish_reason":null}],"usage":null}\n\n`,
        );
      }
      res.write(
        `data: ${JSON.stringify({ id: 'x', object: 'text_completion', created: 0, model: 'm', choices: [], usage: USAGE })}\n\n`,
      );
      res.end('data: [DONE]\n\n');
    });
  });
  return new Promise((resolve) => {
    server.listen(port, host, () => {
      const address = server.address() as { port: number };
      resolve({ server, url: `http://${host}:${address.port}` });
    });
  });
}
