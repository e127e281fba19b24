/**
 * The relay's money promises on the real service (SQLite store, fsync before each acknowledgement),
 * through Anthropic's SDK (docs/gateway.md, "Settlement"):
 * - delivered means settled: a client that awaits each answer finds its call settled, so a key's
 *   limit that fits N calls' holds and their charges is filled exactly, none refused early;
 * - a call the gateway cuts (its time bound) carries no usage: completed, pending, then settled at its
 *   hold (STATE-PFM-LLM-001 transitions 7 and 9), never charged the partial usage it had seen.
 */
import { APIError } from '@anthropic-ai/sdk';
import { EVENT_STORE, type EventStore } from '../../src/event-store/event-store.port';
import { VirtualClock } from '../../src/runtime/clock';
import { bearer, TOKENS } from '../http/support/http-ledger';
import { messageReply, messageStream } from '../support/messages-api-server';
import { GATEWAY_MODEL, settledView, startGatewayService, type GatewayService } from './support/gateway-service';

const SYSTEM = bearer(TOKENS.system);
const PROMPT = { model: GATEWAY_MODEL, max_tokens: 16, messages: [{ role: 'user' as const, content: 'Hi.' }] };
/** The calls the key's limit fits, one after the other. */
const CALLS = 8;
/** Each call's usage (1 input, 1 output token) at the service's rate card: 3 + 15 credits. */
const CHARGE_PER_CALL = 18;
/** The rate card's attemptTimeoutMs (startGatewayService). */
const ATTEMPT_TIMEOUT_MS = 60_000;

describe('the relay settles a call before its caller has it whole, and charges a call it cut its hold (docs/gateway.md)', () => {
  let service: GatewayService;
  let clock: VirtualClock;

  beforeEach(async () => {
    clock = new VirtualClock({ startMs: Date.UTC(2026, 11, 3, 12), autoAdvance: false });
    service = await startGatewayService({ clock });
  });
  afterEach(() => service.close());

  const invocation = async (id: string) => (await service.ledger.http().get(`/v1/invocations/${id}`).set(SYSTEM).expect(200)).body as Record<string, unknown>;

  it('finding 8: a client awaiting each answer sees the call settled: a key limit fitting N calls is filled exactly, none refused early', async () => {
    const { upstream, ledger } = service;
    // One call on the unlimited key tells the hold of a streamed request (its body, and so its hold,
    // is a little larger than the same request's without `stream`).
    const streamed = () => ({ kind: 'sse' as const, steps: messageStream({ model: GATEWAY_MODEL, startUsage: { input_tokens: 1, output_tokens: 1 }, deltaUsage: { output_tokens: 1 } }) });
    upstream.reply(streamed());
    const probe = await service.client().messages.stream(PROMPT).withResponse();
    const hold = (await invocation(probe.response.headers.get('llm-ledger-invocation-id')!)).estimate as number;
    expect(hold).toBeGreaterThan(2 * CALLS * CHARGE_PER_CALL);
    // The limit fits the N-th call's hold after N − 1 charges, and no second hold beside any.
    const limit = hold + (CALLS - 1) * CHARGE_PER_CALL;
    const issued = await ledger.http().post('/v1/organizations/acme/gateway-keys').set(SYSTEM).send({ name: 'sdk-loop', spendLimit: { credits: limit, period: 'day' } }).expect(200);
    const client = service.client();
    client.apiKey = issued.body.key as string;

    for (let call = 1; call <= CALLS; call++) {
      if (call % 2 === 0) {
        upstream.reply(streamed());
        await client.messages.stream(PROMPT).finalMessage();
      } else {
        upstream.reply(messageReply({ usage: { input_tokens: 1, output_tokens: 1 } }));
        await client.messages.create(PROMPT);
      }
    }
    // The spend now leaves less than a streamed call's hold: the next is refused, before upstream.
    const refused = await client.messages.stream(PROMPT).finalMessage().catch((error: unknown) => error);

    expect(refused).toBeInstanceOf(APIError);
    expect((refused as APIError).status).toBe(402);
    expect((refused as APIError).message).toContain(`spent ${CALLS * CHARGE_PER_CALL}, held 0`);
    expect(upstream.requests).toHaveLength(1 + CALLS);
  });

  it('finding 1: a stream the gateway cuts at its time bound carries no usage: completed, pending, then settled at its hold (transitions 7 and 9)', async () => {
    const { upstream } = service;
    const [start, blockStart, ping, delta] = messageStream({ model: GATEWAY_MODEL, startUsage: { input_tokens: 5, output_tokens: 1 } });
    upstream.reply({ kind: 'sse', steps: [start!, blockStart!, ping!, delta!, { end: 'stall' }] });

    const stream = service.client().messages.stream(PROMPT);
    const ended = stream.finalMessage().then(
      () => 'finished',
      (error: Error) => error.message,
    );
    await new Promise<void>((resolve) => stream.once('text', () => resolve()));
    const invocationId = (await stream.withResponse()).response.headers.get('llm-ledger-invocation-id')!;
    await clock.advance(ATTEMPT_TIMEOUT_MS);

    expect(await ended).toContain('time bound');
    const view = await settledView(service.ledger, invocationId);
    expect(view).toMatchObject({ state: 'settled', outcome: 'completed', charge: view.estimate });
    const events = await service.ledger.app.get<EventStore>(EVENT_STORE).readStream(`invocation-${invocationId}`);
    expect(events.map((event) => event.type)).toEqual(expect.arrayContaining(['AttemptRecorded', 'InvocationCompleted', 'InvocationPending', 'InvocationSettled']));
    const attempt = events.find((event) => event.type === 'AttemptRecorded')!.data as Record<string, unknown>;
    expect(attempt).toMatchObject({ classification: 'timeout', timedOut: true, httpStatus: 200 });
    // message_start's 5 input tokens and 1 output token are not the call's usage: upstream was cut.
    expect(attempt.usage).toBeUndefined();
  });

  it('a call whose upstream never answers within its time bound is a 504, completed, pending, then settled at its hold (transitions 7 and 9)', async () => {
    service.upstream.reply({ kind: 'stall' });

    const call = service.client().messages.create(PROMPT).withResponse().catch((error: unknown) => error);
    await service.upstream.waitForRequests(1);
    await clock.advance(ATTEMPT_TIMEOUT_MS);
    const error = (await call) as APIError;

    expect(error).toBeInstanceOf(APIError);
    expect(error.status).toBe(504);
    const invocationId = error.headers?.get('llm-ledger-invocation-id');
    const view = await settledView(service.ledger, invocationId!);
    expect(view).toMatchObject({ state: 'settled', outcome: 'completed', charge: view.estimate });
    const events = await service.ledger.app.get<EventStore>(EVENT_STORE).readStream(`invocation-${invocationId}`);
    expect(events.map((event) => event.type)).toEqual(expect.arrayContaining(['InvocationCompleted', 'InvocationPending', 'InvocationSettled']));
    expect(events.find((event) => event.type === 'AttemptRecorded')!.data).toMatchObject({ classification: 'timeout', timedOut: true });
  });
});
