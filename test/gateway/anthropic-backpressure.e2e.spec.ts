/**
 * A caller that reads slowly costs the gateway a bounded buffer, never the answer: when the caller's
 * socket takes no more, the relay stops reading upstream until it drains, so upstream itself is held
 * back (TCP's flow control carries the pause to it). Proven on bytes: with the caller reading nothing,
 * upstream cannot write the whole answer; it stalls with the gateway paused, having written no more
 * than the sockets between them hold; once the caller reads, every byte arrives.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { GatewayBackpressure } from '../../src/gateway/gateway-http.channels';
import { InMemoryGatewayAccounting } from '../support/in-memory-gateway-accounting';
import { MessagesApiServer, sseEvent } from '../support/messages-api-server';
import { startGateway, type GatewayApp } from './support/gateway-app';

const KEY = 'llk_acme_slow_reader_0123456789abcdefghijkl';
const MODEL = 'claude-gateway-test';
/** One delta event of about 64 KiB, written over and over. */
const DELTA = Buffer.from(sseEvent('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'x'.repeat(64 * 1024) } }));
/** What upstream tries to write in all: far beyond what the sockets between it and the caller hold. */
const TOTAL_BYTES = 256 * 1024 * 1024;
/**
 * The most upstream may have written while the caller read nothing: every socket buffer on the way
 * (two receive buffers of up to 32 MiB each on this loopback, two send buffers of up to 4 MiB) and
 * the streams' own high-water marks, with room to spare. A relay without backpressure lets upstream
 * write all of TOTAL_BYTES.
 */
const MAX_BUFFERED_ON_THE_WAY_BYTES = 128 * 1024 * 1024;
/** The most the gateway's own response may hold unsent when it pauses upstream: its high-water mark and a chunk or two. */
const MAX_GATEWAY_BUFFERED_BYTES = 4 * 1024 * 1024;

const START = Buffer.from(
  sseEvent('message_start', {
    type: 'message_start',
    message: { id: 'msg_slow', type: 'message', role: 'assistant', model: MODEL, content: [], usage: { input_tokens: 9, output_tokens: 1 } },
  }),
);
const END = Buffer.from(
  sseEvent('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 4_000 } }) + sseEvent('message_stop', { type: 'message_stop' }),
);

describe('a slow caller holds upstream back: the gateway buffers a bounded amount, never the answer (docs/gateway.md)', () => {
  let upstream: MessagesApiServer;
  let ledger: InMemoryGatewayAccounting;
  let gateway: GatewayApp;

  beforeEach(async () => {
    upstream = await MessagesApiServer.start();
    ledger = new InMemoryGatewayAccounting({
      keys: [{ key: KEY, keyId: 'key-slow', organizationId: 'acme' }],
      models: [{ id: MODEL, attemptTimeoutMs: 300_000, maxOutputTokens: 8_192 }],
      credits: { acme: 1_000_000 },
    });
    gateway = await startGateway({ accounting: ledger, upstreamURL: upstream.baseURL });
  });

  afterEach(async () => {
    await gateway.close();
    await upstream.close();
  });

  it('stalls upstream while the caller reads nothing, with the gateway paused, then relays every byte once it reads', async () => {
    let written = 0;
    let upstreamBlocked = false;
    let upstreamFinished = false;
    let gatewayPaused = false;
    let gatewayBuffered = 0;
    const onBackpressure = (message: unknown): void => {
      ({ paused: gatewayPaused, bufferedBytes: gatewayBuffered } = message as GatewayBackpressure);
    };
    subscribe('llm-ledger:gateway-backpressure', onBackpressure);
    upstream.reply({
      kind: 'custom',
      respond: async (_request, res: ServerResponse) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(START);
        written += START.length;
        while (written < TOTAL_BYTES && !res.destroyed) {
          written += DELTA.length;
          if (!res.write(DELTA)) {
            upstreamBlocked = true;
            await new Promise((resolve) => res.once('drain', resolve));
            upstreamBlocked = false;
          }
        }
        upstreamFinished = true;
        res.end(END);
        written += END.length;
      },
    });

    try {
      const response = await streamedCall(gateway.port);

      expect(await upstreamStalledOrFinished(() => ({ written, upstreamBlocked, upstreamFinished }))).toBe('stalled');
      expect(written).toBeLessThanOrEqual(MAX_BUFFERED_ON_THE_WAY_BYTES);
      expect(gatewayPaused).toBe(true);
      expect(gatewayBuffered).toBeLessThanOrEqual(MAX_GATEWAY_BUFFERED_BYTES);

      let received = 0;
      response.on('data', (chunk: Buffer) => (received += chunk.length));
      response.resume();
      await new Promise((resolve) => response.once('end', resolve));
      expect(received).toBe(written);
      expect(written).toBeGreaterThanOrEqual(TOTAL_BYTES);
      const [settled] = await ledger.waitForSettlements(1);
      expect(settled!.outcome).toMatchObject({ classification: 'ok', callerDisconnected: false, usage: { inputTokens: 9, outputTokens: 4_000 } });
    } finally {
      unsubscribe('llm-ledger:gateway-backpressure', onBackpressure);
    }
  }, 120_000);
});

/** A streamed call whose answer the caller does not read (its response is paused as it arrives). */
function streamedCall(port: number): Promise<IncomingMessage> {
  const body = JSON.stringify({ model: MODEL, max_tokens: 8_000, stream: true, messages: [{ role: 'user', content: 'Write a lot.' }] });
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      { host: '127.0.0.1', port, path: '/anthropic/v1/messages', method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'x-api-key': KEY } },
      (answer) => {
        answer.pause();
        resolve(answer);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

/**
 * Turns of the event loop upstream must stay blocked without writing a byte for the exchange to count
 * as stalled. Everything runs on loopback in this process: a socket with bytes to read is read on
 * the loop's next turn, so a gateway that went on reading upstream would unblock it within a few.
 */
const QUIET_TURNS = 200;

/** Follows upstream turn by turn until it stalls for good or writes everything. No clock is read. */
async function upstreamStalledOrFinished(state: () => { written: number; upstreamBlocked: boolean; upstreamFinished: boolean }): Promise<'stalled' | 'finished'> {
  let quiet = 0;
  let last = -1;
  for (;;) {
    await new Promise((resolve) => setImmediate(resolve));
    const { written, upstreamBlocked, upstreamFinished } = state();
    if (upstreamFinished) return 'finished';
    quiet = upstreamBlocked && written === last ? quiet + 1 : 0;
    last = written;
    if (quiet >= QUIET_TURNS) return 'stalled';
  }
}
