import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { AggregatesModule } from '../aggregates/aggregates.module';
import { AdjustCreditsHandler, ChangeOrganizationSettingsHandler, GrantCreditsHandler } from './account-commands.handler';

/** The accounts' commands (docs/architecture.md): grants, adjustments and an organization's settings. */
export const ACCOUNTS_COMMAND_HANDLERS = [GrantCreditsHandler, AdjustCreditsHandler, ChangeOrganizationSettingsHandler];

@Module({
  imports: [CqrsModule, AggregatesModule],
  providers: [...ACCOUNTS_COMMAND_HANDLERS],
})
export class AccountsModule {}
