/**
 * Streamed Messages calls through the gateway with Anthropic's SDK: every event relayed as it
 * arrives (the client reads the first text while upstream still holds the rest), usage read from
 * message_start and the cumulative message_delta, and a caller that leaves mid-stream settled on
 * Anthropic's own usage, read to the end of the stream.
 */
import { InMemoryGatewayAccounting } from '../support/in-memory-gateway-accounting';
import { MessagesApiServer, messageStream } from '../support/messages-api-server';
import { startGateway, type GatewayApp } from './support/gateway-app';

const KEY = 'llk_acme_stream_0123456789abcdefghijklmnop';
const MODEL = 'claude-gateway-test';
const PROMPT = { model: MODEL, max_tokens: 512, messages: [{ role: 'user' as const, content: 'Say hello.' }] };

/** A promise and the function that resolves it. */
function signal(): { readonly promise: Promise<void>; readonly fire: () => void } {
  let fire!: () => void;
  const promise = new Promise<void>((resolve) => (fire = resolve));
  return { promise, fire };
}

describe('a streamed call is relayed event by event, nothing buffered to the end (docs/gateway.md)', () => {
  let upstream: MessagesApiServer;
  let ledger: InMemoryGatewayAccounting;
  let gateway: GatewayApp;

  beforeEach(async () => {
    upstream = await MessagesApiServer.start();
    ledger = new InMemoryGatewayAccounting({
      keys: [{ key: KEY, keyId: 'key-stream', organizationId: 'acme' }],
      models: [{ id: MODEL, attemptTimeoutMs: 30_000, maxOutputTokens: 4_096 }],
      credits: { acme: 1_000_000 },
    });
    gateway = await startGateway({ accounting: ledger, upstreamURL: upstream.baseURL });
  });

  afterEach(async () => {
    await gateway.close();
    await upstream.close();
  });

  it('gives messages.stream its first text while upstream still holds the rest, then the whole message, settled on the stream’s usage', async () => {
    const firstTextSeen = signal();
    upstream.reply({
      kind: 'sse',
      steps: messageStream({
        texts: ['Hello', ', world', '!'],
        startUsage: { input_tokens: 40, output_tokens: 1, cache_creation_input_tokens: 8, cache_read_input_tokens: null },
        deltaUsage: { output_tokens: 17 },
        // Upstream sends nothing more until the client has read the first text.
        after: [{ until: firstTextSeen.promise }],
      }),
    });

    const texts: string[] = [];
    const stream = gateway.client(KEY).messages.stream(PROMPT);
    stream.on('text', (text) => {
      texts.push(text);
      if (texts.length === 1) firstTextSeen.fire();
    });
    const message = await stream.finalMessage();

    expect(texts).toEqual(['Hello', ', world', '!']);
    expect(message.content.map((block) => (block.type === 'text' ? block.text : block.type))).toEqual(['Hello, world!']);
    const [settled] = await ledger.waitForSettlements(1);
    expect(ledger.admitted[0]).toMatchObject({ stream: true });
    expect(settled!.outcome).toMatchObject({
      classification: 'ok',
      httpStatus: 200,
      responseModel: 'claude-test-model',
      stopReason: 'end_turn',
      usage: { inputTokens: 40, cacheWriteTokens: 8, outputTokens: 17 },
      callerDisconnected: false,
      timedOut: false,
    });
  });

  it('relays every event as upstream wrote it, pings included, with the answer’s content type and the invocation id', async () => {
    upstream.reply({ kind: 'sse', steps: messageStream({ texts: ['a', 'b'] }) });

    const { data: stream, response } = await gateway.client(KEY).messages.create({ ...PROMPT, stream: true }).withResponse();
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);

    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(response.headers.get('llm-ledger-invocation-id')).toBe('gw-call-1');
    expect(types).toEqual(['message_start', 'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    await ledger.waitForSettlements(1);
  });

  it('reads a stream its caller left to its end, and settles on Anthropic’s full usage, marked callerDisconnected', async () => {
    const callerGone = signal();
    upstream.reply({
      kind: 'sse',
      steps: messageStream({ texts: ['one', ' two', ' three'], deltaUsage: { output_tokens: 300 }, after: [{ until: callerGone.promise }] }),
    });

    const stream = gateway.client(KEY).messages.stream(PROMPT);
    const aborted = stream.done().then(
      () => 'finished',
      (error: Error) => error.name,
    );
    await new Promise<void>((resolve) => stream.once('text', () => resolve()));
    stream.abort();
    expect(await aborted).toBe('APIUserAbortError');
    await gateway.connectionsClosed();
    callerGone.fire();

    const [settled] = await ledger.waitForSettlements(1);
    expect(settled!.outcome).toMatchObject({ classification: 'ok', callerDisconnected: true, timedOut: false, usage: { inputTokens: 25, outputTokens: 300 } });
    expect(settled!.charge).toBe(25 + 300 * 5);
    expect(ledger.account('acme')).toMatchObject({ held: 0, running: 0 });
  });
});
