/**
 * Issue 31, finding 2: recovery settled a live gateway call. A caller stalled past the call's time
 * bound kept its relay waiting, and recovery (in the same process or another instance on the same
 * log) then settled the still-dispatched call at its hold, "the service stopped while the call was in
 * flight", while the service was running; the relay's own settlement then failed.
 *
 * Here a streamed call is kept open (the local Messages API writes its first event and then holds the
 * stream open; the caller reads that event and then nothing) on an instance whose clock is moved past the
 * recovery threshold and up to the call's time bound, where its relay ends it. Recovery must leave it
 * to that relay, though the call is past the threshold and its bound: on that instance (whose pass
 * came due at the very instant of the bound), and from a second instance on the same SQLite file
 * whose clock is a little ahead. Time moves only by the instances' virtual clocks.
 *
 * Both cases failed before the lease (recovery settled the call, transition 14). Since the relay
 * ends a call at its bound by itself (0ccca06), the first is also closed by the relay winning that
 * instant's race; the second, another instance a moment ahead, only by the call's owner and deadline.
 */
import { request as httpRequest, type ClientRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { INVOCATION_ID_HEADER } from '../../src/gateway/anthropic-error.body';
import { MAX_GATEWAY_ATTEMPT_TIMEOUT_MS } from '../../src/gateway/rate-card';
import { MAX_SHUTDOWN_SETTLE_WAIT_MS } from '../../src/gateway/gateway-forwarder';
import { INSTANCE_LEASE } from '../../src/invocations/instance-lease';
import type { InstanceLeaseKeeper } from '../../src/invocations/instance-lease.keeper';
import { InvocationRecovery } from '../../src/invocations/invocation-recovery';
import { EVENT_STORE, type EventStore } from '../../src/event-store/event-store.port';
import { VirtualClock } from '../../src/runtime';
import { bearer, startHttpLedger, TOKENS, type HttpLedger } from '../http/support/http-ledger';
import { sseEvent } from '../support/messages-api-server';
import { GATEWAY_MODEL, GATEWAY_PRICES, startGatewayService, type GatewayService } from './support/gateway-service';

/** Recovery's defaults: a pass a minute, and five minutes without a sign of life make a request stale. */
const RECOVERY_INTERVAL_MS = 60_000;
const RECOVERY_STALE_AFTER_MS = 300_000;
/** The rate card's longest time bound (600 s), as Claude Code's long streams need: past the threshold. */
const TIME_BOUND_MS = MAX_GATEWAY_ATTEMPT_TIMEOUT_MS;
/** How far the clock is moved after dispatch: past the threshold and the time bound, inside the margin. */
const MOVED_MS = TIME_BOUND_MS + 1_000;
/** Steps the clock is moved in, in ms, each followed by the passes and renewals it made due. */
const STEP_MS = 5_000;

const START_EVENT = sseEvent('message_start', {
  type: 'message_start',
  message: { id: 'msg_live', type: 'message', role: 'assistant', model: GATEWAY_MODEL, content: [], usage: { input_tokens: 10, output_tokens: 1 } },
});

interface LiveCall {
  readonly invocationId: string;
  readonly caller: ClientRequest;
  readonly answer: IncomingMessage;
}

/** A streamed call whose upstream writes message_start and then holds the stream open; the caller reads that and stops. */
async function startLiveCall(service: GatewayService, baseUrl: string, upstreamOpen: ServerResponse[]): Promise<LiveCall> {
  service.upstream.reply({
    kind: 'custom',
    respond: async (_request, res) => {
      upstreamOpen.push(res);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(START_EVENT);
    },
  });
  const body = JSON.stringify({ model: GATEWAY_MODEL, max_tokens: 1_000, stream: true, messages: [{ role: 'user', content: 'hello' }] });
  const caller = httpRequest(`${baseUrl}/anthropic/v1/messages`, {
    method: 'POST',
    agent: false,
    headers: { 'content-type': 'application/json', 'x-api-key': service.key, 'anthropic-version': '2023-06-01' },
  });
  caller.end(body);
  const answer = await new Promise<IncomingMessage>((resolve, reject) => caller.once('response', resolve).once('error', reject));
  // The first event arrived: the call is dispatched and its relay runs. Then the caller reads nothing more.
  await new Promise<void>((resolve) => answer.once('data', () => resolve()));
  answer.pause();
  return { invocationId: String(answer.headers[INVOCATION_ID_HEADER]), caller, answer };
}

async function settlementsOf(store: EventStore, invocationId: string): Promise<Record<string, unknown>[]> {
  const events = await store.readStream(`invocation-${invocationId}`);
  return events.filter((event) => event.type === 'InvocationSettled').map((event) => event.data as Record<string, unknown>);
}

/** Moves the clock `ms` forward in steps, letting each step's lease renewal and recovery pass end before the next. */
async function moveClock(clock: VirtualClock, ledger: HttpLedger, ms: number): Promise<void> {
  for (let moved = 0; moved < ms; moved += STEP_MS) {
    await clock.advance(Math.min(STEP_MS, ms - moved));
    await ledger.app.get<InstanceLeaseKeeper>(INSTANCE_LEASE).idle();
    await ledger.app.get(InvocationRecovery).idle();
  }
}

describe('issue 31 finding 2: recovery never settles a gateway call its live instance is still relaying, past the stale threshold and the time bound', () => {
  let clock: VirtualClock;
  let service: GatewayService;
  let baseUrl: string;
  let call: LiveCall | undefined;
  const upstreamOpen: ServerResponse[] = [];

  async function start(recoveryIntervalMs: number): Promise<void> {
    clock = new VirtualClock({ startMs: Date.UTC(2026, 11, 3, 12), autoAdvance: false });
    service = await startGatewayService({
      clock,
      keepDirectory: true,
      env: { LEDGER_RECOVERY_INTERVAL_MS: String(recoveryIntervalMs), LEDGER_RECOVERY_STALE_AFTER_MS: String(RECOVERY_STALE_AFTER_MS) },
    });
    await service.ledger
      .http()
      .put(`/v1/gateway/models/${GATEWAY_MODEL}`)
      .set(bearer(TOKENS.system))
      .send({ prices: GATEWAY_PRICES, maxOutputTokens: 64_000, attemptTimeoutMs: TIME_BOUND_MS, enabled: true })
      .expect(200);
    const address = service.ledger.app.getHttpServer().address() as { port: number };
    baseUrl = `http://127.0.0.1:${address.port}`;
    call = await startLiveCall(service, baseUrl, upstreamOpen);
  }

  afterEach(async () => {
    call?.caller.destroy();
    for (const res of upstreamOpen.splice(0)) res.destroy();
    // Shutdown waits (by the clock) for the aborted calls to settle: let that wait pass.
    const closing = service.ledger.close();
    await clock.advance(MAX_SHUTDOWN_SETTLE_WAIT_MS);
    await closing;
    await service.upstream.close();
  });

  it('leaves it to its relay on its own instance, whose recovery passes run every minute meanwhile', async () => {
    await start(RECOVERY_INTERVAL_MS);
    await moveClock(clock, service.ledger, MOVED_MS);
    const store = service.ledger.app.get<EventStore>(EVENT_STORE);
    expect((await settlementsOf(store, call!.invocationId)).filter(({ settledBy }) => settledBy === 'recovery')).toEqual([]);
  });

  it('leaves it to its relay from a second instance on the same SQLite file, whose recovery runs at its start', async () => {
    await start(0);
    // The first instance is just short of the time bound, its relay still running; the second one's
    // clock (another machine's, or a pass that came due a moment later) is just past it.
    await moveClock(clock, service.ledger, TIME_BOUND_MS - STEP_MS);
    const secondClock = new VirtualClock({ startMs: clock.now() + 2 * STEP_MS, autoAdvance: false });
    const second = await startHttpLedger({
      clock: secondClock,
      directory: service.ledger.directory,
      keepDirectory: true,
      env: {
        // Its own read models beside the shared log, as a second service has.
        LEDGER_READ_STORE: join(service.ledger.directory, 'second.read.sqlite'),
        LEDGER_RECOVERY_INTERVAL_MS: String(RECOVERY_INTERVAL_MS),
        LEDGER_RECOVERY_STALE_AFTER_MS: String(RECOVERY_STALE_AFTER_MS),
      },
    });
    try {
      await secondClock.advance(0);
      await second.app.get(InvocationRecovery).idle();
      const store = second.app.get<EventStore>(EVENT_STORE);
      expect((await settlementsOf(store, call!.invocationId)).filter(({ settledBy }) => settledBy === 'recovery')).toEqual([]);
    } finally {
      await second.close();
    }
  });
});
