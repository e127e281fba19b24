import { Inject } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { AggregateRepository } from '../aggregates/aggregate.repository';
import { CLOCK, isoAt } from '../domain/clock.token';
import type { Clock } from '../runtime';
import { accountDecider } from './account.decider';
import { accountStreamName } from './account.events';
import { balanceOf, ledgerEntryFor } from './account.state';
import {
  AdjustCreditsCommand,
  ChangeOrganizationSettingsCommand,
  GrantCreditsCommand,
  LedgerEntryResult,
  OrganizationSettings,
} from './account-commands';

@CommandHandler(GrantCreditsCommand)
export class GrantCreditsHandler implements ICommandHandler<GrantCreditsCommand, LedgerEntryResult> {
  constructor(
    private readonly repository: AggregateRepository,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute({ organizationId, credits, reason, idempotencyKey }: GrantCreditsCommand): Promise<LedgerEntryResult> {
    const { state, events } = await this.repository.handle(accountStreamName(organizationId), accountDecider, {
      type: 'GrantCredits',
      data: { credits, reason, idempotencyKey, grantedAt: isoAt(this.clock) },
    });
    return { organizationId, kind: 'grant', credits, reason, idempotencyKey, repeated: events.length === 0, balance: balanceOf(state) };
  }
}

@CommandHandler(AdjustCreditsCommand)
export class AdjustCreditsHandler implements ICommandHandler<AdjustCreditsCommand, LedgerEntryResult> {
  constructor(
    private readonly repository: AggregateRepository,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute({ organizationId, credits, reason, idempotencyKey }: AdjustCreditsCommand): Promise<LedgerEntryResult> {
    const { state, events } = await this.repository.handle(accountStreamName(organizationId), accountDecider, {
      type: 'AdjustCredits',
      data: { credits, reason, idempotencyKey, adjustedAt: isoAt(this.clock) },
    });
    const entry = ledgerEntryFor(state, idempotencyKey);
    return {
      organizationId,
      kind: 'adjustment',
      credits: entry?.credits ?? credits,
      reason,
      idempotencyKey,
      repeated: events.length === 0,
      balance: balanceOf(state),
    };
  }
}

@CommandHandler(ChangeOrganizationSettingsCommand)
export class ChangeOrganizationSettingsHandler
  implements ICommandHandler<ChangeOrganizationSettingsCommand, OrganizationSettings>
{
  constructor(
    private readonly repository: AggregateRepository,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute({ organizationId, settings }: ChangeOrganizationSettingsCommand): Promise<OrganizationSettings> {
    const { state } = await this.repository.handle(accountStreamName(organizationId), accountDecider, {
      type: 'ChangeSettings',
      data: { ...settings, changedAt: isoAt(this.clock) },
    });
    return { organizationId, aiEnabled: state.aiEnabled, maxRunning: state.maxRunning };
  }
}
