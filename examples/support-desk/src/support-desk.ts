import 'reflect-metadata';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import {
  GetExplanationQuery,
  GrantCreditsCommand,
  PublishOperationCommand,
  RunOperationCommand,
  type ExplanationView,
  type InvocationResult,
  type LedgerModuleOptions,
  type PublicationRequest,
} from 'llm-ledger';
import { SettledInvocations } from './settled.listener';
import { SupportDeskModule } from './support-desk.module';
import { TRIAGE_OPERATION_ID } from './triage.feature';

export const ORGANIZATION_ID = 'northwind';

/** The desk's publication of its operation: routed offline (`scripted`) or to `anthropic`. */
export function triagePublication(provider: 'scripted' | 'anthropic'): PublicationRequest {
  return {
    routing: { provider, model: provider === 'anthropic' ? 'claude-sonnet-4-5' : 'scripted-triage' },
    limits: { maxTurns: 4, maxToolCalls: 4, totalTimeMs: 30_000, attemptTimeoutMs: 10_000, maxOutputTokens: 512, maxAttemptsPerTurn: 2 },
    prices: { inputPerMTok: 300_000, outputPerMTok: 1_500_000, cacheWritePerMTok: 375_000, cacheReadPerMTok: 30_000 },
    creditHold: 1_000,
    enabled: true,
  };
}

/** One triage, as the desk runs it: the result (with its answer), the explanation, the settled charge. */
export interface Triage {
  readonly result: InvocationResult;
  readonly explanation: ExplanationView | undefined;
  readonly settledCharge: number;
}

export class SupportDesk {
  private constructor(readonly app: INestApplicationContext) {}

  static async start(ledger: LedgerModuleOptions): Promise<SupportDesk> {
    const app = await NestFactory.createApplicationContext(SupportDeskModule.forRoot(ledger), { logger: false });
    await app.init();
    return new SupportDesk(app);
  }

  async setUp(provider: 'scripted' | 'anthropic', credits: number): Promise<void> {
    const commands = this.app.get(CommandBus);
    await commands.execute(new PublishOperationCommand(TRIAGE_OPERATION_ID, triagePublication(provider)));
    await commands.execute(new GrantCreditsCommand(ORGANIZATION_ID, credits, 'monthly plan', `plan-${provider}`));
  }

  async triage(ticket: string): Promise<Triage> {
    const result = await this.app
      .get(CommandBus)
      .execute(new RunOperationCommand({ operationId: TRIAGE_OPERATION_ID, organizationId: ORGANIZATION_ID, input: { ticket, customerId: 'cust-7' } }));
    const explanation = await this.app.get(QueryBus).execute(new GetExplanationQuery(result.invocationId));
    const settledCharge = await this.app.get(SettledInvocations).chargeOf(result.invocationId);
    return { result, explanation, settledCharge };
  }

  close(): Promise<void> {
    return this.app.close();
  }
}
