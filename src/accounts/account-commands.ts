import { Command } from '@nestjs/cqrs';
import type { Balance } from './account.state';

export interface LedgerEntryResult {
  readonly organizationId: string;
  readonly kind: 'grant' | 'adjustment';
  readonly credits: number;
  readonly reason: string;
  readonly idempotencyKey: string;
  /** True when the key had been used before with the same entry: nothing new was written. */
  readonly repeated: boolean;
  readonly balance: Balance;
}

/**
 * Adds credits to an organization's account (docs/lifecycle.md "Settlement and the account"). The
 * idempotency key makes a retry harmless.
 */
export class GrantCreditsCommand extends Command<LedgerEntryResult> {
  constructor(
    readonly organizationId: string,
    readonly credits: number,
    readonly reason: string,
    readonly idempotencyKey: string,
  ) {
    super();
  }
}

/** Corrects an organization's credits up or down (docs/lifecycle.md "Settlement and the account"). */
export class AdjustCreditsCommand extends Command<LedgerEntryResult> {
  constructor(
    readonly organizationId: string,
    readonly credits: number,
    readonly reason: string,
    readonly idempotencyKey: string,
  ) {
    super();
  }
}

export interface OrganizationSettings {
  readonly organizationId: string;
  readonly aiEnabled: boolean;
  readonly maxRunning: number;
}

/** Switches AI on or off for an organization and sets its running-slot limit. */
export class ChangeOrganizationSettingsCommand extends Command<OrganizationSettings> {
  constructor(
    readonly organizationId: string,
    readonly settings: { readonly aiEnabled?: boolean; readonly maxRunning?: number },
  ) {
    super();
  }
}
