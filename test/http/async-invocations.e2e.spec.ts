import type { AddressInfo } from 'node:net';
import { scriptedToolUse } from '../../src/runtime';
import { scriptedFeature, usage } from '../support/scripted-feature';
import { bearer, publicationBody, startHttpLedger, TOKENS, type HttpLedger } from './support/http-ledger';

const OPERATION = 'test.gated';
const QUESTION = 'What is the private number? (conversation text)';

/** A gate the test opens: the model's first turn waits for it. */
let openGate: () => void = () => undefined;
let gate: Promise<void> = Promise.resolve();
const closeGate = (): void => {
  gate = new Promise<void>((resolve) => (openGate = resolve));
};

const gatedFeature = scriptedFeature(OPERATION, () => [
  async () => {
    await gate;
    return scriptedToolUse([{ id: 't1', name: 'lookup', input: { q: 'n' } }], { usage: usage(10, 5) });
  },
  scriptedToolUse([{ id: 'a1', name: 'submit_answer', input: { value: 42 } }], { usage: usage(12, 6) }),
]);

/** An idempotency key the stored event keeps and the event stream must not show. */
const SECRET_KEY = 'sse-key-kept-private';
/** Every field an event-stream message may carry (InvocationProgressDto), and nothing else. */
const PUBLIC_FIELDS = new Set(['type', 'revision', 'time', 'invocationId', 'state', 'operationId', 'organizationId', 'publicationVersion', 'estimate', 'refusalReason', 'creditHold', 'attempt', 'outcome', 'endingLimit', 'fault', 'turnsUsed', 'toolCallsUsed', 'spentCredits', 'attemptCount', 'charge', 'settlementTransition', 'requestedBy']);

/** Each message's data is the documented public shape: its type and revision match the SSE fields, and no secret is in it. */
function expectPublicProgress(messages: readonly SseMessage[], invocationId: string): void {
  const states = ['estimated', 'reserved', 'dispatched', 'completed', 'pending', 'failed', 'settled', 'refused'];
  for (const message of messages) {
    expect(message.data).not.toContain(SECRET_KEY);
    const data = JSON.parse(message.data) as Record<string, unknown>;
    expect(Object.keys(data).filter((key) => !PUBLIC_FIELDS.has(key))).toEqual([]);
    expect(data).toMatchObject({ type: message.event, revision: Number(message.id), invocationId });
    expect(states).toContain(data.state);
    expect(Number.isFinite(Date.parse(data.time as string))).toBe(true);
    expect(data).not.toHaveProperty('idempotencyKey');
    expect(data).not.toHaveProperty('requestFingerprint');
    expect(data).not.toHaveProperty('publication');
  }
}

interface SseMessage {
  readonly id: string;
  readonly event: string;
  readonly data: string;
}

/** Reads SSE messages from a fetch body until `stop` says so or the server closes the stream. */
async function readEvents(response: Response, stop: (messages: readonly SseMessage[]) => boolean = () => false): Promise<{ messages: SseMessage[]; closed: boolean }> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  const messages: SseMessage[] = [];
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return { messages, closed: true };
    buffer += decoder.decode(value, { stream: true });
    let boundary: number;
    while ((boundary = buffer.indexOf('\n\n')) !== -1) {
      const block = buffer.slice(0, boundary);
      buffer = buffer.slice(boundary + 2);
      const fields = Object.fromEntries(
        block
          .split('\n')
          .filter((line) => !line.startsWith(':'))
          .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)]),
      );
      if (fields.id !== undefined) messages.push({ id: fields.id, event: fields.event, data: fields.data });
      if (stop(messages)) {
        await reader.cancel();
        return { messages, closed: false };
      }
    }
  }
}

describe('docs/http.md async invocations: Prefer: respond-async, then Server-Sent Events from the log', () => {
  let ledger: HttpLedger;
  let base: string;

  beforeAll(async () => {
    ledger = await startHttpLedger({ features: [gatedFeature] });
    await ledger.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(ledger.app.getHttpServer().address() as AddressInfo).port}`;
    await ledger.http().put(`/v1/operations/${OPERATION}/publications`).set(bearer(TOKENS.system)).send(publicationBody({ creditHold: 2_000 })).expect(200);
    await ledger.http().post('/v1/organizations/acme/grants').set(bearer(TOKENS.system)).send({ credits: 50_000, reason: 'plan', idempotencyKey: 'plan' }).expect(200);
  });

  afterAll(() => ledger.close());

  it('answers 202 at once, then a real client follows it from estimated to settled, resuming after a dropped connection with nothing missing or repeated', async () => {
    closeGate();
    const accepted = await fetch(`${base}/v1/invocations`, {
      method: 'POST',
      headers: { ...bearer(TOKENS.acmeMember), 'Content-Type': 'application/json', Prefer: 'respond-async', 'Idempotency-Key': SECRET_KEY },
      body: JSON.stringify({ operationId: OPERATION, organizationId: 'acme', input: { question: QUESTION } }),
    });
    expect(accepted.status).toBe(202);
    const { invocationId, state } = (await accepted.json()) as { invocationId: string; state: string };
    expect(accepted.headers.get('location')).toBe(`/v1/invocations/${invocationId}`);
    expect(['estimated', 'reserved', 'dispatched']).toContain(state);

    // First connection: read until the conversation is dispatched (its model waits at the gate), then drop it.
    const events = `${base}/v1/invocations/${invocationId}/events`;
    const first = await readEvents(await fetch(events, { headers: bearer(TOKENS.acmeMember) }), (messages) =>
      messages.some((message) => message.event === 'InvocationDispatched'),
    );
    expect(first.closed).toBe(false);
    expect(first.messages.map((message) => message.event)).toEqual(['InvocationEstimated', 'InvocationReserved', 'InvocationDispatched']);

    // While nobody listens the conversation goes on to its end.
    openGate();
    const poll = await ledger.http().get(`/v1/invocations/${invocationId}`).set(bearer(TOKENS.acmeMember)).expect(200);
    expect(['dispatched', 'completed', 'settled']).toContain(poll.body.state);

    const resumed = await fetch(events, { headers: { ...bearer(TOKENS.acmeMember), 'Last-Event-ID': first.messages.at(-1)!.id } });
    expect(resumed.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const second = await readEvents(resumed);
    expect(second.closed).toBe(true);
    expect(second.messages.at(-1)!.event).toBe('InvocationSettled');

    const all = [...first.messages, ...second.messages];
    const log = await ledger.http().get(`/v1/streams/invocation-${invocationId}`).set(bearer(TOKENS.auditor)).expect(200);
    expect(all.map((message) => message.id)).toEqual(log.body.events.map((event: { revision: string }) => event.revision));
    expect(all.map((message) => message.event)).toEqual(log.body.events.map((event: { type: string }) => event.type));
    for (const message of all) expect(message.data).not.toContain('private number');
    expectPublicProgress(all, invocationId);
    // The resumed connection still names the state each event left the invocation in.
    expect(JSON.parse(second.messages[0]!.data)).toMatchObject({ state: 'dispatched' });
    const settlement = log.body.events.at(-1).data as { chargeCredits: number };
    expect(JSON.parse(all.at(-1)!.data)).toMatchObject({ type: 'InvocationSettled', state: 'settled', charge: settlement.chargeCredits });
  });

  it('sends the whole stream of a settled invocation and closes; from past its end it closes at once', async () => {
    const settled = await ledger
      .http()
      .post('/v1/invocations')
      .set(bearer(TOKENS.acmeMember))
      .send({ operationId: OPERATION, organizationId: 'acme', input: { question: 'q' } })
      .expect(200);
    const events = `${base}/v1/invocations/${settled.body.invocationId}/events`;
    const whole = await readEvents(await fetch(events, { headers: bearer(TOKENS.auditor) }));
    expect(whole.closed).toBe(true);
    expect(whole.messages[0]).toMatchObject({ id: '0', event: 'InvocationEstimated' });
    expect(whole.messages.at(-1)!.event).toBe('InvocationSettled');
    expectPublicProgress(whole.messages, settled.body.invocationId);
    expect(JSON.parse(whole.messages[0]!.data)).toMatchObject({ operationId: OPERATION, organizationId: 'acme', publicationVersion: 1, estimate: 2_000 });
    expect(JSON.parse(whole.messages.find((message) => message.event === 'AttemptRecorded')!.data).attempt).toEqual({
      turn: 1,
      retry: 0,
      classification: 'ok',
      model: 'scripted-model',
      durationMs: expect.any(Number),
      priceCredits: expect.any(Number),
    });
    const past = await readEvents(await fetch(events, { headers: { ...bearer(TOKENS.auditor), 'Last-Event-ID': '999' } }));
    expect(past).toEqual({ messages: [], closed: true });
  });

  it('refuses a Last-Event-ID that is not a revision (400 naming it), another organization’s invocation (404), and no token (401)', async () => {
    const settled = await ledger.http().post('/v1/invocations').set(bearer(TOKENS.acmeMember)).send({ operationId: OPERATION, organizationId: 'acme', input: { question: 'q' } }).expect(200);
    const path = `/v1/invocations/${settled.body.invocationId}/events`;
    const bad = await ledger.http().get(path).set(bearer(TOKENS.acmeMember)).set('Last-Event-ID', 'abc');
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.body.fields)).toEqual(['Last-Event-ID']);
    expect((await ledger.http().get(path).set(bearer(TOKENS.globexMember))).status).toBe(404);
    expect((await ledger.http().get(path)).status).toBe(401);
  });

  it('answers a keyed async repeat 202 at once while the first still runs in this process, without waiting for its end (docs/http.md)', async () => {
    closeGate();
    const send = () =>
      ledger.http().post('/v1/invocations').set(bearer(TOKENS.acmeMember)).set('Prefer', 'respond-async').set('Idempotency-Key', 'async-repeat').send({ operationId: OPERATION, organizationId: 'acme', input: { question: 'q' } });
    const first = await send();
    expect(first.status).toBe(202);
    // The model still waits at the gate: a repeat that waited for the end would never answer here.
    const repeat = await send();
    expect(repeat.status).toBe(202);
    expect(repeat.body.invocationId).toBe(first.body.invocationId);
    expect(['estimated', 'reserved', 'dispatched']).toContain(repeat.body.state);
    openGate();
    const events = await readEvents(await fetch(`${base}/v1/invocations/${first.body.invocationId}/events`, { headers: bearer(TOKENS.acmeMember) }));
    expect(events.messages.filter((message) => message.event === 'InvocationEstimated')).toHaveLength(1);
    expect(events.messages.at(-1)!.event).toBe('InvocationSettled');
  });

  it('still refuses bad input synchronously under Prefer: respond-async', async () => {
    const response = await ledger.http().post('/v1/invocations').set(bearer(TOKENS.acmeMember)).set('Prefer', 'respond-async').send({ operationId: OPERATION, organizationId: 'nobody-yet', input: { question: 'q' } });
    expect(response.status).toBe(404);
  });
});
