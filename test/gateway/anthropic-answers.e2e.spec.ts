/**
 * Answers relayed as a client can read them and priced from Anthropic's usage whatever their coding or
 * size (docs/gateway.md, "Relaying"), and settled before the caller has them whole ("Settlement"):
 * issue 31's findings 6 and 8, through Anthropic's SDK against a local Messages API.
 */
import { gzipSync, brotliCompressSync, deflateSync } from 'node:zlib';
import type { ServerResponse } from 'node:http';
import { InMemoryGatewayAccounting } from '../support/in-memory-gateway-accounting';
import { messageReply, MessagesApiServer, messageStream, sseEvent, textBlock, type SseStep } from '../support/messages-api-server';
import { startGateway, type GatewayApp } from './support/gateway-app';

const KEY = 'llk_acme_answers_0123456789abcdefghijklmno';
const MODEL = 'claude-gateway-test';
const PROMPT = { model: MODEL, max_tokens: 1_000, messages: [{ role: 'user' as const, content: 'Go.' }] };
/** Turns of the event loop each settlement takes: a stand-in for the store's commit and fsync. */
const SETTLEMENT_TURNS = 20;

const COMPRESSORS: Readonly<Record<string, (bytes: Buffer) => Buffer>> = { gzip: gzipSync, br: brotliCompressSync, deflate: deflateSync };
const MESSAGE = {
  id: 'msg_zipped',
  type: 'message',
  role: 'assistant',
  model: MODEL,
  content: [{ type: 'text', text: 'Compressed hello.' }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 10, output_tokens: 5 },
};

/** A scripted answer written compressed in `coding`, in two pieces, with its `content-encoding`. */
function compressed(coding: string, contentType: string, body: string) {
  return {
    kind: 'custom' as const,
    respond: (_request: unknown, res: ServerResponse) => {
      const bytes = COMPRESSORS[coding]!(Buffer.from(body));
      res.writeHead(200, { 'content-type': contentType, 'content-encoding': coding, 'content-length': bytes.length, 'request-id': 'req_zipped' });
      res.write(bytes.subarray(0, bytes.length >> 1));
      res.end(bytes.subarray(bytes.length >> 1));
    },
  };
}

function sseText(steps: readonly SseStep[]): string {
  return steps.map((step) => ('event' in step ? sseEvent(step.event, step.data) : '')).join('');
}

describe('answers in any coding and of any size are relayed readable and priced from their usage, settled before they are whole (docs/gateway.md)', () => {
  let upstream: MessagesApiServer;
  let ledger: InMemoryGatewayAccounting;
  let gateway: GatewayApp;

  beforeEach(async () => {
    upstream = await MessagesApiServer.start();
    ledger = new InMemoryGatewayAccounting({
      keys: [{ key: KEY, keyId: 'key-answers', organizationId: 'acme' }],
      models: [{ id: MODEL, attemptTimeoutMs: 60_000, maxOutputTokens: 4_096 }],
      credits: { acme: 10_000_000 },
      settling: async () => {
        for (let turn = 0; turn < SETTLEMENT_TURNS; turn++) await new Promise((resolve) => setImmediate(resolve));
      },
    });
    gateway = await startGateway({ accounting: ledger, upstreamURL: upstream.baseURL });
  });

  afterEach(async () => {
    await gateway.close();
    await upstream.close();
  });

  it.each(['gzip', 'br', 'deflate'])('finding 6: a %s answer is relayed decoded (no content-encoding) and priced from its usage', async (coding) => {
    upstream.reply(compressed(coding, 'application/json', JSON.stringify(MESSAGE)));

    const { data: message, response } = await gateway.client(KEY).messages.create(PROMPT).withResponse();

    expect(message.content).toEqual([{ type: 'text', text: 'Compressed hello.' }]);
    expect(response.headers.get('content-encoding')).toBeNull();
    // The gateway asks upstream for no coding; the caller's own accept-encoding is not passed.
    expect(upstream.requests[0]!.headers['accept-encoding']).toBe('identity');
    const [settled] = await ledger.waitForSettlements(1);
    expect(settled!.outcome).toMatchObject({ classification: 'ok', usage: { inputTokens: 10, outputTokens: 5 }, stopReason: 'end_turn' });
    expect(settled!.charge).toBe(10 + 5 * 5);
  });

  it.each(['gzip', 'br'])('finding 6: a %s stream is relayed decoded event by event and priced from its final usage', async (coding) => {
    const steps = messageStream({ texts: ['Zip', 'ped'], startUsage: { input_tokens: 10, output_tokens: 1 }, deltaUsage: { output_tokens: 5 } });
    upstream.reply(compressed(coding, 'text/event-stream; charset=utf-8', sseText(steps)));

    const stream = gateway.client(KEY).messages.stream(PROMPT);
    const message = await stream.finalMessage();

    expect(message.content).toEqual([{ type: 'text', text: 'Zipped' }]);
    const [settled] = await ledger.waitForSettlements(1);
    expect(settled!.outcome).toMatchObject({ classification: 'ok', usage: { inputTokens: 10, outputTokens: 5 } });
    expect(settled!.charge).toBe(10 + 5 * 5);
  });

  it('relays an answer in a coding it cannot decode as sent, with its content-encoding, and charges its hold (its usage unread)', async () => {
    upstream.reply({
      kind: 'custom',
      respond: (_request, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'x-unknown', 'content-length': 5 });
        res.end(Buffer.from([1, 2, 3, 4, 5]));
      },
    });

    const answer = await fetch(`${gateway.baseURL}/v1/messages`, { method: 'POST', headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, body: JSON.stringify(PROMPT) });

    expect(answer.headers.get('content-encoding')).toBe('x-unknown');
    const [settled] = await ledger.waitForSettlements(1);
    expect(settled!.outcome).toMatchObject({ classification: 'ok', httpStatus: 200 });
    expect(settled!.outcome.usage).toBeUndefined();
    expect(settled!.charge).toBe(settled!.admission.holdCredits);
  });

  it('cuts an answer that says gzip but cannot be decoded: a 502 api_error, its usage unknown, charged its hold', async () => {
    upstream.reply({
      kind: 'custom',
      respond: (_request, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
        res.end(JSON.stringify(MESSAGE));
      },
    });

    await expect(gateway.client(KEY).messages.create(PROMPT)).rejects.toMatchObject({ status: 502, error: { error: { type: 'api_error', message: expect.stringContaining('could not be decoded') } } });

    const [settled] = await ledger.waitForSettlements(1);
    expect(settled!.outcome).toMatchObject({ classification: 'connection', httpStatus: 200 });
    expect(settled!.outcome.usage).toBeUndefined();
    expect(settled!.charge).toBe(settled!.admission.holdCredits);
  });

  it('finding 6: a 9 MiB JSON answer is priced from its usage', async () => {
    const text = 'All work and no play. '.repeat((9 * 1024 * 1024) / 22 + 1);
    upstream.reply(messageReply({ content: [textBlock(text)], usage: { input_tokens: 40, output_tokens: 900 } }));

    const message = await gateway.client(KEY).messages.create(PROMPT);

    expect(message.content).toEqual([{ type: 'text', text }]);
    const [settled] = await ledger.waitForSettlements(1);
    expect(settled!.outcome).toMatchObject({ classification: 'ok', usage: { inputTokens: 40, outputTokens: 900 } });
    expect(settled!.charge).toBe(40 + 900 * 5);
  });

  it('finding 8: a client awaiting each answer sees the call settled, streamed or not', async () => {
    for (let call = 1; call <= 6; call++) {
      if (call % 2 === 0) {
        upstream.reply({ kind: 'sse', steps: messageStream({ startUsage: { input_tokens: 7, output_tokens: 1 }, deltaUsage: { output_tokens: 2 } }) });
        await gateway.client(KEY).messages.stream(PROMPT).finalMessage();
      } else {
        upstream.reply(messageReply({ usage: { input_tokens: 7, output_tokens: 2 } }));
        await gateway.client(KEY).messages.create(PROMPT);
      }
      // The answer's last byte came after its settlement, however long the settlement took.
      expect(ledger.settlements).toHaveLength(call);
    }
  });

  it('finding 8: an error answer, streamed mid-way or not, also reaches the caller only once settled', async () => {
    upstream.reply({ kind: 'json', status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } });
    await expect(gateway.client(KEY).messages.create(PROMPT)).rejects.toMatchObject({ status: 529 });
    expect(ledger.settlements).toHaveLength(1);

    const [start, blockStart, ping, delta] = messageStream({ startUsage: { input_tokens: 7, output_tokens: 1 } });
    upstream.reply({ kind: 'sse', steps: [start!, blockStart!, ping!, delta!, { event: 'error', data: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } }] });
    await expect(gateway.client(KEY).messages.stream(PROMPT).finalMessage()).rejects.toThrow('Overloaded');
    expect(ledger.settlements).toHaveLength(2);
  });
});
