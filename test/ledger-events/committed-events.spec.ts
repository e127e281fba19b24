import { Injectable, Module } from '@nestjs/common';
import { EventsHandler, type IEventHandler } from '@nestjs/cqrs';
import { ChangeOrganizationSettingsCommand, GrantCreditsCommand } from '../../src/accounts/account-commands';
import { EVENT_STORE, type EventStore, type NewEvent } from '../../src/event-store/event-store.port';
import { openEventStore } from '../../src/event-store/open-event-store';
import { LEDGER_CONFIG, type LedgerConfig } from '../../src/config/ledger.config';
import { CreditsGranted, InvocationRefused, InvocationSettled, type LedgerEvent } from '../../src/ledger-events/ledger-events';
import { RunOperationCommand } from '../../src/invocations/run-operation.command';
import { scriptedToolUse } from '../../src/runtime';
import { seed, startLedgerApp, type LedgerTestApp } from '../support/ledger-app';
import { scriptedFeature, usage } from '../support/scripted-feature';

/** What the consuming module's handlers saw, and whether each event was in the log when they saw it. */
@Injectable()
class Seen {
  readonly events: { readonly event: LedgerEvent; readonly committed: boolean }[] = [];
  store!: EventStore;

  async note(event: LedgerEvent): Promise<void> {
    const stream = await this.store.readStream(event.streamName);
    this.events.push({ event, committed: stream.some((recorded) => recorded.position === event.position && recorded.type === event.type) });
  }

  types(): string[] {
    return this.events.map(({ event }) => event.type);
  }
}

@EventsHandler(InvocationRefused, CreditsGranted, InvocationSettled)
class ConsumerHandler implements IEventHandler<LedgerEvent> {
  constructor(private readonly seen: Seen) {}

  handle(event: LedgerEvent): Promise<void> {
    return this.seen.note(event);
  }
}

@Module({ providers: [Seen, ConsumerHandler] })
class ConsumerModule {}

const feature = scriptedFeature('test.answer', () => [
  scriptedToolUse([{ id: 'a', name: 'submit_answer', input: { value: 42 } }], { usage: usage(100, 10) }),
]);

/** Polls between event-loop turns (no timers) until the consumer has seen `count` events. */
async function seenAtLeast(seen: Seen, count: number): Promise<void> {
  for (let turn = 0; turn < 100_000 && seen.events.length < count; turn++) await new Promise((resolve) => setImmediate(resolve));
  if (seen.events.length < count) throw new Error(`the consumer saw ${seen.events.length} of ${count} events`);
}

describe('docs/embedding.md: every lifecycle and account event reaches a consuming module’s @EventsHandler as its class, once committed', () => {
  let ledger: LedgerTestApp;
  let failRefusals = false;

  beforeEach(async () => {
    failRefusals = false;
    ledger = await startLedgerApp({
      features: [feature],
      imports: [ConsumerModule],
      // The log refuses to append an InvocationRefused while `failRefusals` is on, as a crashed disk would.
      override: {
        provide: EVENT_STORE,
        inject: [LEDGER_CONFIG],
        useFactory: async (config: LedgerConfig) => {
          const store = await openEventStore(config.store, { synchronous: config.sqliteSynchronous });
          const append = store.append.bind(store);
          store.append = (streamName: string, events: readonly NewEvent[], options) =>
            failRefusals && events.some((event) => event.type === 'InvocationRefused') ? Promise.reject(new Error('disk failed')) : append(streamName, events, options);
          return store;
        },
      },
    });
    ledger.app.get(Seen).store = ledger.store;
    await seed(ledger, { operationId: 'test.answer', organizationId: 'acme', credits: 5_000 });
    await seenAtLeast(ledger.app.get(Seen), 1);
  });

  afterEach(() => ledger.close());

  const run = () => ledger.commandBus.execute(new RunOperationCommand({ operationId: 'test.answer', organizationId: 'acme', input: {} }));

  it('hands a CreditsGranted over with its data, stream and position, after it is in the log', async () => {
    const seen = ledger.app.get(Seen);
    const [granted] = seen.events;
    expect(granted?.event).toBeInstanceOf(CreditsGranted);
    expect(granted?.event).toMatchObject({ type: 'CreditsGranted', streamName: 'account-acme', data: { credits: 5_000, idempotencyKey: 'seed-acme' } });
    expect(typeof granted?.event.position).toBe('bigint');
    expect(granted?.committed).toBe(true);
  });

  it('hands InvocationRefused to the handler only after it committed (STATE-PFM-LLM-001 transition 1)', async () => {
    const seen = ledger.app.get(Seen);
    await ledger.commandBus.execute(new ChangeOrganizationSettingsCommand('acme', { aiEnabled: false }));
    const refused = await run();
    expect(refused).toMatchObject({ state: 'refused' });
    await seenAtLeast(seen, 2);
    const event = seen.events.find(({ event: e }) => e instanceof InvocationRefused);
    expect(event).toMatchObject({ committed: true, event: { streamName: `invocation-${refused.invocationId}` } });
  });

  it('never hands over an InvocationRefused whose append failed', async () => {
    const seen = ledger.app.get(Seen);
    await ledger.commandBus.execute(new ChangeOrganizationSettingsCommand('acme', { aiEnabled: false }));
    failRefusals = true;
    await expect(run()).rejects.toThrow('disk failed');
    // A later committed event arrives; the failed refusal never does.
    await ledger.commandBus.execute(new GrantCreditsCommand('acme', 1, 'after', 'after-1'));
    await seenAtLeast(seen, 2);
    expect(seen.types()).toEqual(['CreditsGranted', 'CreditsGranted']);
  });

  it('hands over InvocationSettled when an invocation settles', async () => {
    const seen = ledger.app.get(Seen);
    const result = await run();
    await seenAtLeast(seen, 2);
    expect(seen.events[1]).toMatchObject({ committed: true, event: { type: 'InvocationSettled', streamName: `invocation-${result.invocationId}`, data: { chargeCredits: result.charge } } });
  });
});
