import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { CommandBus, EventsHandler, QueryBus, type IEventHandler } from '@nestjs/cqrs';
import {
  GetExplanationQuery, GrantCreditsCommand, InvocationSettled, LedgerFeaturesModule, LedgerModule, PublishOperationCommand,
  RunOperationCommand, ScriptedProvider, scriptedToolUse, type OperationFeature, type Usage,
} from 'llm-ledger';

// Every kind of usage is a count; the scripted model reports these for each of its replies.
const usage = (inputTokens: number, outputTokens: number): Usage =>
  ({ inputTokens, outputTokens, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, webSearchRequests: 0 });

// A feature: the conversation for one operation, with one tool and the tool the answer comes back in.
const weather: OperationFeature = {
  operationId: 'quickstart.weather',
  prepare: (input) => ({
    system: [{ type: 'text', text: 'Answer with submit_answer.' }],
    messages: [{ role: 'user', content: [{ type: 'text', text: `Weather in ${(input as { city: string }).city}?` }] }],
    tools: [{ name: 'forecast', description: 'Today’s forecast for a city.', effect: 'read',
      inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      handler: async (args) => ({ city: (args as { city: string }).city, sky: 'sunny' }) }],
    answerTool: { name: 'submit_answer', description: 'The answer.', inputSchema: { type: 'object', properties: { sky: { type: 'string' } } },
      judge: () => ({ accepted: true }) },
  }),
  // Offline: the model a `scripted` routing gets, one reply per turn (each tool call needs its own id).
  scriptedModel: () => new ScriptedProvider([
    scriptedToolUse([{ id: 'call-1', name: 'forecast', input: { city: 'Lisbon' } }], { usage: usage(120, 20) }),
    scriptedToolUse([{ id: 'call-2', name: 'submit_answer', input: { sky: 'sunny' } }], { usage: usage(160, 12) }),
  ]),
};

// Published once committed to the log, with data, streamName and position.
@Injectable()
@EventsHandler(InvocationSettled)
export class OnSettled implements IEventHandler<InvocationSettled> {
  private readonly charges = new Map<string, number>();
  private readonly waiting = new Map<string, (credits: number) => void>();
  handle(event: InvocationSettled): void {
    this.charges.set(event.streamName, event.data.chargeCredits);
    this.waiting.get(event.streamName)?.(event.data.chargeCredits);
  }
  /** The charge of an invocation's settlement, once its event has arrived. */
  charged(invocationId: string): Promise<number> {
    const charge = this.charges.get(`invocation-${invocationId}`);
    return charge !== undefined ? Promise.resolve(charge) : new Promise((resolve) => this.waiting.set(`invocation-${invocationId}`, resolve));
  }
}

@Module({
  imports: [LedgerModule.forRoot({ store: 'sqlite::memory:', readStore: ':memory:', answerStore: ':memory:' }), LedgerFeaturesModule.register(weather)],
  providers: [OnSettled],
})
export class AppModule {}

async function main(): Promise<void> {
  // No HTTP server: an application context gives the buses.
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['warn', 'error'] });
  const commands = app.get(CommandBus);
  // Before the first run: publish the operation (routing, limits, prices, hold) and grant the organization credits.
  await commands.execute(new PublishOperationCommand('quickstart.weather', {
    routing: { provider: 'scripted', model: 'quickstart-model' },
    limits: { maxTurns: 4, maxToolCalls: 4, totalTimeMs: 30_000, attemptTimeoutMs: 10_000, maxOutputTokens: 512 },
    prices: { inputPerMTok: 300_000, outputPerMTok: 1_500_000, cacheWritePerMTok: 375_000, cacheReadPerMTok: 30_000 },
    creditHold: 1_000,
    enabled: true,
  }));
  await commands.execute(new GrantCreditsCommand('acme', 10_000, 'monthly plan', 'acme-plan-1'));

  const result = await commands.execute(new RunOperationCommand({ operationId: 'quickstart.weather', organizationId: 'acme', input: { city: 'Lisbon' } }));
  const why = await app.get(QueryBus).execute(new GetExplanationQuery(result.invocationId));
  console.log(result.outcome, JSON.stringify(result.answer), `charged ${result.charge} credits`);
  console.log(why?.sentence);
  console.log(`InvocationSettled: charged ${await app.get(OnSettled).charged(result.invocationId)} credits`);
  await app.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
