/**
 * A gateway call's `chat {model}` span, after the OpenTelemetry GenAI semantic conventions as an
 * operation's attempts have it (docs/gateway.md "Traces"), through the in-memory exporter, on the
 * real service with Anthropic's SDK as the caller: a call answered whole, a streamed one, and one
 * upstream refused with 529. No prompt, answer or tool text reaches any span.
 */
import Anthropic from '@anthropic-ai/sdk';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { ATTR_ERROR_TYPE } from '@opentelemetry/semantic-conventions';
import {
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MAX_TOKENS,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_REQUEST_STREAM,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_RESPONSE_ID,
  ATTR_GEN_AI_RESPONSE_MODEL,
  ATTR_GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
} from '@opentelemetry/semantic-conventions/incubating';
import { LEDGER_ATTRIBUTES } from '../../src/observability/invocation-telemetry';
import { errorReply, messageReply, messageStream, textBlock, toolUseBlock } from '../support/messages-api-server';
import { GATEWAY_MODEL, settledView, startGatewayService, type GatewayService } from './support/gateway-service';

// Distinctive conversation text: none of it may appear in any exported span.
const SECRETS = {
  system: 'Platypus gateway system prompt',
  question: 'Zebra question through the gateway',
  toolArgument: 'Quokka tool argument',
  answer: 'Axolotl answer from upstream',
  streamed: 'Narwhal streamed delta',
};
const SERVED_MODEL = `${GATEWAY_MODEL}-20261001`;

describe('docs/gateway.md "Traces": each admitted gateway call is one chat {model} span with the GenAI attributes, and no conversation text', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  let service: GatewayService;
  const ids: { whole?: string; streamed?: string; failed?: string } = {};
  let spans: ReadableSpan[];

  const body = (stream: boolean) => ({
    model: GATEWAY_MODEL,
    max_tokens: 512,
    stream,
    system: SECRETS.system,
    messages: [{ role: 'user' as const, content: SECRETS.question }],
    tools: [{ name: 'lookup', description: 'Looks it up.', input_schema: { type: 'object' as const, properties: { q: { type: 'string' } } } }],
  });

  beforeAll(async () => {
    trace.setGlobalTracerProvider(provider);
    service = await startGatewayService();
    service.upstream.reply(
      messageReply({
        model: SERVED_MODEL,
        content: [textBlock(SECRETS.answer), toolUseBlock('toolu_1', 'lookup', { q: SECRETS.toolArgument })],
        stopReason: 'tool_use',
        usage: { input_tokens: 120, output_tokens: 30, cache_creation_input_tokens: 40, cache_read_input_tokens: 50 },
      }),
      { kind: 'sse', steps: messageStream({ model: SERVED_MODEL, texts: [SECRETS.streamed, ' and more'], startUsage: { input_tokens: 77, output_tokens: 1 }, deltaUsage: { output_tokens: 9 } }) },
      errorReply(529, 'overloaded_error', 'Overloaded'),
    );
    const client = service.client();
    exporter.reset();
    const whole = await client.messages.create({ ...body(false), stream: false }).withResponse();
    ids.whole = whole.response.headers.get('llm-ledger-invocation-id')!;
    const stream = client.messages.stream(body(true));
    await stream.finalMessage();
    ids.streamed = (await stream.withResponse()).response.headers.get('llm-ledger-invocation-id')!;
    const failed = await client.messages.create({ ...body(false), stream: false }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failed).toBeInstanceOf(Anthropic.APIError);
    ids.failed = (failed as InstanceType<typeof Anthropic.APIError>).headers?.get('llm-ledger-invocation-id') ?? undefined;
    for (const id of Object.values(ids)) await settledView(service.ledger, id!);
    await provider.forceFlush();
    spans = exporter.getFinishedSpans().filter((span) => span.name.startsWith('chat '));
  });

  afterAll(async () => {
    await service.close();
    trace.disable();
    await provider.shutdown();
  });

  const spanOf = (invocationId: string | undefined): ReadableSpan => {
    const found = spans.filter((span) => span.attributes[ATTR_GEN_AI_CONVERSATION_ID] === invocationId);
    expect(found).toHaveLength(1);
    return found[0]!;
  };

  it('makes one client span per admitted call, named for the model asked, with the request’s attributes', () => {
    expect(Object.values(ids).every((id) => typeof id === 'string')).toBe(true);
    expect(spans).toHaveLength(3);
    for (const [id, stream] of [
      [ids.whole, false],
      [ids.streamed, true],
      [ids.failed, false],
    ] as const) {
      const span = spanOf(id);
      expect(span.name).toBe(`chat ${GATEWAY_MODEL}`);
      expect(span.kind).toBe(SpanKind.CLIENT);
      expect(span.attributes).toMatchObject({
        [ATTR_GEN_AI_OPERATION_NAME]: 'chat',
        [ATTR_GEN_AI_PROVIDER_NAME]: 'anthropic',
        [ATTR_GEN_AI_REQUEST_MODEL]: GATEWAY_MODEL,
        [ATTR_GEN_AI_REQUEST_MAX_TOKENS]: 512,
        [ATTR_GEN_AI_REQUEST_STREAM]: stream,
        [LEDGER_ATTRIBUTES.organizationId]: 'acme',
        [LEDGER_ATTRIBUTES.gatewayKeyId]: service.keyId,
        [LEDGER_ATTRIBUTES.callerDisconnected]: false,
      });
    }
  });

  it('gives an answered call the served model, its finish reason, upstream’s request id and Anthropic’s usage', () => {
    const whole = spanOf(ids.whole);
    expect(whole.attributes).toMatchObject({
      [ATTR_GEN_AI_RESPONSE_MODEL]: SERVED_MODEL,
      [ATTR_GEN_AI_RESPONSE_FINISH_REASONS]: ['tool_use'],
      [ATTR_GEN_AI_RESPONSE_ID]: 'req_fake_0001',
      // Input counts every input token, cache writes and reads included; the cache counts go beside it.
      [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: 210,
      [ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: 30,
      [ATTR_GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS]: 40,
      [ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS]: 50,
    });
    expect(whole.attributes[ATTR_ERROR_TYPE]).toBeUndefined();
    expect(whole.status.code).not.toBe(SpanStatusCode.ERROR);
    const streamed = spanOf(ids.streamed);
    // message_start's usage, with the last message_delta's cumulative output over it.
    expect(streamed.attributes).toMatchObject({
      [ATTR_GEN_AI_RESPONSE_MODEL]: SERVED_MODEL,
      [ATTR_GEN_AI_RESPONSE_FINISH_REASONS]: ['end_turn'],
      [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: 77,
      [ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: 9,
    });
  });

  it('marks the call upstream refused with error.type = its fault class and an error status', () => {
    const failed = spanOf(ids.failed);
    expect(failed.attributes[ATTR_ERROR_TYPE]).toBe('overloaded');
    expect(failed.status.code).toBe(SpanStatusCode.ERROR);
    expect(failed.attributes[ATTR_GEN_AI_USAGE_INPUT_TOKENS]).toBeUndefined();
  });

  it('spans the attempt’s own time: it starts when the call went upstream and lasts as long as it', () => {
    for (const span of spans) {
      const startMs = span.startTime[0] * 1_000 + span.startTime[1] / 1_000_000;
      const endMs = span.endTime[0] * 1_000 + span.endTime[1] / 1_000_000;
      expect(endMs).toBeGreaterThanOrEqual(startMs);
      expect(startMs).toBeGreaterThan(Date.parse('2026-01-01T00:00:00Z'));
    }
  });

  it('carries no conversation text in any exported span (names, attributes, events, links, status)', () => {
    const exported = JSON.stringify(
      exporter.getFinishedSpans().map((span) => ({ name: span.name, attributes: span.attributes, events: span.events, links: span.links, status: span.status })),
    );
    expect(exported.length).toBeGreaterThan(500);
    for (const text of Object.values(SECRETS)) expect(exported).not.toContain(text);
    for (const word of ['Platypus', 'Zebra', 'Quokka', 'Axolotl', 'Narwhal']) expect(exported).not.toContain(word);
    // Nor the caller's key.
    expect(exported).not.toContain(service.key);
  });
});
