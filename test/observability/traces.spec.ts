import { context, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { ATTR_ERROR_TYPE } from '@opentelemetry/semantic-conventions';
import {
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_RESPONSE_MODEL,
  ATTR_GEN_AI_TOOL_CALL_ID,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
} from '@opentelemetry/semantic-conventions/incubating';
import type { OperationFeature } from '../../src/features/operation-feature';
import { ScriptedProvider, scriptedFault, scriptedToolUse } from '../../src/runtime';
import { bearer, publicationBody, startHttpLedger, TOKENS, type HttpLedger } from '../http/support/http-ledger';
import { usage } from '../support/scripted-feature';

// Distinctive conversation text: none of it may appear in any exported span.
const SECRETS = {
  system: 'Platypus system instructions',
  question: 'Zebra question from the customer',
  argument: 'Quokka tool argument',
  result: 'Narwhal tool result',
  answer: 'Axolotl final answer',
};

/** A feature whose model is overloaded once, then calls a tool, then answers. */
const traced: OperationFeature = {
  operationId: 'traces.answer',
  prepare: () => ({
    system: [{ type: 'text', text: SECRETS.system, stable: true }],
    messages: [{ role: 'user', content: [{ type: 'text', text: SECRETS.question }] }],
    tools: [
      {
        name: 'lookup',
        description: 'Looks it up.',
        inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
        effect: 'read',
        handler: () => SECRETS.result,
      },
    ],
    answerTool: {
      name: 'submit_answer',
      description: 'Submits the answer.',
      inputSchema: { type: 'object', properties: { value: { type: 'string' } }, required: ['value'] },
      judge: (input) => ((input as { value: string }).value === SECRETS.answer ? { accepted: true } : { accepted: false, feedback: 'no' }),
    },
  }),
  scriptedModel: () =>
    new ScriptedProvider([
      scriptedFault('overloaded', { httpStatus: 529, usage: usage(7, 0) }),
      scriptedToolUse([{ id: 'call-lookup-1', name: 'lookup', input: { q: SECRETS.argument } }], { usage: usage(100, 10, 20, 30) }),
      scriptedToolUse([{ id: 'call-answer-1', name: 'submit_answer', input: { value: SECRETS.answer } }], { usage: usage(150, 5, 0, 120) }),
    ]),
};

describe('README.md OpenTelemetry GenAI traces of an invocation, through the in-memory exporter', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const contextManager = new AsyncLocalStorageContextManager();
  let ledger: HttpLedger;
  let invocationId: string;
  let spans: ReadableSpan[];

  beforeAll(async () => {
    context.setGlobalContextManager(contextManager.enable());
    trace.setGlobalTracerProvider(provider);
    ledger = await startHttpLedger({ features: [traced] });
    await ledger.http().put('/v1/operations/traces.answer/publications').set(bearer(TOKENS.system)).send(publicationBody()).expect(200);
    await ledger.http().post('/v1/organizations/acme/grants').set(bearer(TOKENS.system)).send({ credits: 50_000, reason: 'plan', idempotencyKey: 'p1' }).expect(200);
    exporter.reset();
    const response = await ledger
      .http()
      .post('/v1/invocations')
      .set(bearer(TOKENS.acmeMember))
      .send({ operationId: 'traces.answer', organizationId: 'acme', input: { question: SECRETS.question } })
      .expect(200);
    expect(response.body).toMatchObject({ state: 'settled', outcome: 'completed' });
    invocationId = response.body.invocationId;
    await provider.forceFlush();
    spans = exporter.getFinishedSpans();
  });

  afterAll(async () => {
    await ledger.close();
    trace.disable();
    context.disable();
    await provider.shutdown();
  });

  const named = (prefix: string) => spans.filter((span) => span.name.startsWith(prefix));

  it('makes one invocation span whose conversation id is the invocation id, with chat and execute_tool spans under it', () => {
    const [invocation, ...others] = named('invoke_agent ');
    expect(others).toEqual([]);
    expect(invocation!.name).toBe('invoke_agent traces.answer');
    expect(invocation!.attributes[ATTR_GEN_AI_CONVERSATION_ID]).toBe(invocationId);
    expect(invocation!.attributes[ATTR_GEN_AI_OPERATION_NAME]).toBe('invoke_agent');
    const children = spans.filter((span) => span !== invocation);
    expect(children.map((span) => span.name).sort()).toEqual(['chat scripted-model', 'chat scripted-model', 'chat scripted-model', 'execute_tool lookup']);
    for (const child of children) {
      expect(child.parentSpanContext?.spanId).toBe(invocation!.spanContext().spanId);
      expect(child.spanContext().traceId).toBe(invocation!.spanContext().traceId);
      expect(child.attributes[ATTR_GEN_AI_CONVERSATION_ID]).toBe(invocationId);
    }
  });

  it('gives each provider attempt a chat span in order, the overloaded one with error.type = its fault class', () => {
    const chats = named('chat ').sort((a, b) => (a.startTime[0] - b.startTime[0]) || (a.startTime[1] - b.startTime[1]));
    const [failed, tool, answer] = chats;
    for (const chat of chats) {
      expect(chat.attributes).toMatchObject({
        [ATTR_GEN_AI_OPERATION_NAME]: 'chat',
        [ATTR_GEN_AI_PROVIDER_NAME]: 'scripted',
        [ATTR_GEN_AI_REQUEST_MODEL]: 'scripted-model',
      });
    }
    expect(failed!.attributes[ATTR_ERROR_TYPE]).toBe('overloaded');
    expect(failed!.status.code).toBe(SpanStatusCode.ERROR);
    // The billed failure's usage is on its span too.
    expect(failed!.attributes[ATTR_GEN_AI_USAGE_INPUT_TOKENS]).toBe(7);
    expect(tool!.attributes).toMatchObject({
      [ATTR_GEN_AI_RESPONSE_MODEL]: 'scripted-model',
      [ATTR_GEN_AI_RESPONSE_FINISH_REASONS]: ['tool_use'],
      // Input counts every input token, cache writes and reads included; the cache counts beside it.
      [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: 150,
      [ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: 10,
      [ATTR_GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS]: 20,
      [ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS]: 30,
    });
    expect(tool!.attributes[ATTR_ERROR_TYPE]).toBeUndefined();
    expect(answer!.attributes[ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS]).toBe(120);
  });

  it('gives the tool call an execute_tool span with its name and call id', () => {
    const [tool] = named('execute_tool ');
    expect(tool!.attributes).toMatchObject({
      [ATTR_GEN_AI_OPERATION_NAME]: 'execute_tool',
      [ATTR_GEN_AI_TOOL_NAME]: 'lookup',
      [ATTR_GEN_AI_TOOL_CALL_ID]: 'call-lookup-1',
    });
  });

  it('carries no conversation text in any exported span (names, attributes, events, status, resource)', () => {
    const exported = JSON.stringify(
      spans.map((span) => ({
        name: span.name,
        attributes: span.attributes,
        events: span.events,
        links: span.links,
        status: span.status,
        resource: span.resource.attributes,
      })),
    );
    expect(exported.length).toBeGreaterThan(500);
    for (const text of Object.values(SECRETS)) expect(exported).not.toContain(text);
    expect(exported).not.toContain('Platypus');
    expect(exported).not.toContain('Narwhal');
  });

  it('puts the trace id in the settled invocation log line', () => {
    const [invocation] = named('invoke_agent ');
    const line = ledger.logs.find((entry) => entry.includes('invocation settled') && entry.includes(invocationId));
    expect(line).toBeDefined();
    expect(line).toContain(`"traceId":"${invocation!.spanContext().traceId}"`);
  });
});
