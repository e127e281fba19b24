/**
 * A slow caller never slows the reading of upstream (docs/gateway.md, "Backpressure"): the gateway
 * reads upstream's answer to its end whatever the caller does, buffers what the caller has not taken
 * up to MAX_CALLER_BUFFER_BYTES and drops a caller past it, so the call is always priced from
 * Anthropic's final usage. Once the call is settled, a caller has CALLER_DRAIN_TIMEOUT_MS to take the
 * rest of its answer. Proven on bytes, with the caller's socket paused; timers through the clock.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { once } from 'node:events';
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { CALLER_DRAIN_TIMEOUT_MS, MAX_CALLER_BUFFER_BYTES } from '../../src/gateway/gateway-relay';
import type { GatewayCallerDropped } from '../../src/gateway/gateway-http.channels';
import { VirtualClock } from '../../src/runtime/clock';
import { InMemoryGatewayAccounting } from '../support/in-memory-gateway-accounting';
import { MessagesApiServer, sseEvent } from '../support/messages-api-server';
import { startGateway, type GatewayApp } from './support/gateway-app';

const KEY = 'llk_acme_slow_reader_0123456789abcdefghijkl';
const MODEL = 'claude-gateway-test';
const ATTEMPT_TIMEOUT_MS = 300_000;
/** One delta event of about 64 KiB, written over and over. */
const DELTA = Buffer.from(sseEvent('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'x'.repeat(64 * 1024) } }));
/**
 * What upstream writes for the stalled caller: beyond every socket buffer between the gateway and the
 * caller (a send buffer of up to 4 MiB, a receive buffer of up to 32 MiB on this loopback) and the
 * gateway's own bound, so only a gateway that reads on past its bound lets upstream finish.
 */
const PAST_EVERY_BUFFER_BYTES = 96 * 1024 * 1024;

const START = Buffer.from(
  sseEvent('message_start', {
    type: 'message_start',
    message: { id: 'msg_slow', type: 'message', role: 'assistant', model: MODEL, content: [], usage: { input_tokens: 9, output_tokens: 1 } },
  }),
);
const FINAL_OUTPUT_TOKENS = 4_000;
const END = Buffer.from(
  sseEvent('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: FINAL_OUTPUT_TOKENS } }) + sseEvent('message_stop', { type: 'message_stop' }),
);

describe('a slow caller never slows upstream: read to its end, the caller buffered up to a bound then dropped (docs/gateway.md)', () => {
  let upstream: MessagesApiServer;
  let ledger: InMemoryGatewayAccounting;
  let gateway: GatewayApp;
  let clock: VirtualClock;
  let dropped: GatewayCallerDropped[];
  const onDropped = (message: unknown): void => void dropped.push(message as GatewayCallerDropped);

  beforeEach(async () => {
    dropped = [];
    subscribe('llm-ledger:gateway-caller-dropped', onDropped);
    upstream = await MessagesApiServer.start();
    clock = new VirtualClock({ startMs: 1_000_000, autoAdvance: false });
    ledger = new InMemoryGatewayAccounting({
      keys: [{ key: KEY, keyId: 'key-slow', organizationId: 'acme' }],
      models: [{ id: MODEL, attemptTimeoutMs: ATTEMPT_TIMEOUT_MS, maxOutputTokens: 8_192 }],
      credits: { acme: 1_000_000 },
    });
    gateway = await startGateway({ accounting: ledger, upstreamURL: upstream.baseURL, clock });
  });

  afterEach(async () => {
    unsubscribe('llm-ledger:gateway-caller-dropped', onDropped);
    await gateway.close();
    await upstream.close();
  });

  it('finding 1: a caller that stops reading is dropped past the buffer bound and the call is charged the upstream’s final usage', async () => {
    const state = writeAnswer(upstream, PAST_EVERY_BUFFER_BYTES);

    const response = await streamedCall(gateway.port);

    // Upstream is never held back: it writes its whole answer although the caller reads nothing.
    expect(await upstreamStalledOrFinished(state)).toBe('finished');
    expect(dropped).toEqual([expect.objectContaining({ reason: 'buffer' })]);
    expect(dropped[0]!.bufferedBytes).toBeGreaterThan(MAX_CALLER_BUFFER_BYTES);
    const [settled] = await ledger.waitForSettlements(1);
    expect(settled!.outcome).toMatchObject({ classification: 'ok', callerDisconnected: true, timedOut: false, usage: { inputTokens: 9, outputTokens: FINAL_OUTPUT_TOKENS } });
    expect(settled!.charge).toBe(InMemoryGatewayAccounting.priceOf(settled!.outcome.usage!));
    // What the sockets held still reaches the caller, then its connection ends short of the answer.
    expect(await readToClose(response)).toBeLessThan(state().written);
  }, 120_000);

  it('relays every byte to a caller that pauses within the bound and reads on, settled on the final usage', async () => {
    const state = writeAnswer(upstream, 4 * 1024 * 1024);

    const response = await streamedCall(gateway.port);
    expect(await upstreamStalledOrFinished(state)).toBe('finished');
    await ledger.waitForSettlements(1);
    let received = 0;
    response.on('data', (chunk: Buffer) => (received += chunk.length));
    response.resume();
    await once(response, 'end');

    expect(received).toBe(state().written);
    expect(dropped).toEqual([]);
    expect(ledger.settlements[0]!.outcome).toMatchObject({ classification: 'ok', callerDisconnected: false, usage: { outputTokens: FINAL_OUTPUT_TOKENS } });
  }, 120_000);

  it('finding 2: a caller that does not take the rest of its answer within CALLER_DRAIN_TIMEOUT_MS of the settlement is dropped', async () => {
    // More than the sockets take from a caller that reads nothing (about 4 MiB here), less than the gateway's bound.
    const state = writeAnswer(upstream, 7 * 1024 * 1024);

    const response = await streamedCall(gateway.port);
    expect(await upstreamStalledOrFinished(state)).toBe('finished');
    await ledger.waitForSettlements(1);
    await clock.advance(CALLER_DRAIN_TIMEOUT_MS - 1);
    expect(dropped).toEqual([]);
    await clock.advance(1);

    expect(await readToClose(response)).toBeLessThan(state().written);
    expect(dropped).toEqual([expect.objectContaining({ reason: 'drain_timeout' })]);
    expect(ledger.settlements[0]!.outcome).toMatchObject({ classification: 'ok', usage: { outputTokens: FINAL_OUTPUT_TOKENS } });
  }, 120_000);
});

interface UpstreamState {
  readonly written: number;
  readonly upstreamBlocked: boolean;
  readonly upstreamFinished: boolean;
}

/** Scripts upstream to stream `deltaBytes` of deltas between message_start and the final usage. */
function writeAnswer(upstream: MessagesApiServer, deltaBytes: number): () => UpstreamState {
  let written = 0;
  let upstreamBlocked = false;
  let upstreamFinished = false;
  upstream.reply({
    kind: 'custom',
    respond: async (_request, res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(START);
      written += START.length;
      while (written < deltaBytes && !res.destroyed) {
        written += DELTA.length;
        if (!res.write(DELTA)) {
          upstreamBlocked = true;
          await once(res, 'drain');
          upstreamBlocked = false;
        }
      }
      res.end(END, () => (upstreamFinished = true));
      written += END.length;
    },
  });
  return () => ({ written, upstreamBlocked, upstreamFinished });
}

/** A streamed call whose answer the caller does not read (its response is paused as it arrives). */
function streamedCall(port: number): Promise<IncomingMessage> {
  const body = JSON.stringify({ model: MODEL, max_tokens: 8_000, stream: true, messages: [{ role: 'user', content: 'Write a lot.' }] });
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      { host: '127.0.0.1', port, path: '/anthropic/v1/messages', method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'x-api-key': KEY } },
      (answer) => {
        answer.pause();
        answer.on('error', () => undefined);
        resolve(answer);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

/** Reads the rest of what reaches the caller until its connection closes; the bytes received. */
async function readToClose(response: IncomingMessage): Promise<number> {
  let received = 0;
  response.on('data', (chunk: Buffer) => (received += chunk.length));
  // An `aborted` error comes first (the answer is cut short); `once` would reject on it.
  const closed = new Promise((resolve) => response.once('close', resolve));
  response.resume();
  await closed;
  expect(response.complete).toBe(false);
  return received;
}

/**
 * Turns of the event loop upstream must stay blocked without writing a byte for the exchange to count
 * as stalled. Everything runs on loopback in this process: a socket with bytes to read is read on
 * the loop's next turn, so a gateway that went on reading upstream would unblock it within a few.
 */
const QUIET_TURNS = 200;

/** Follows upstream turn by turn until it stalls for good or writes everything. No clock is read. */
async function upstreamStalledOrFinished(state: () => UpstreamState): Promise<'stalled' | 'finished'> {
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
