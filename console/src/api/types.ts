/**
 * What the console reads, typed by the service's own definitions of the API's answers (type-only
 * imports: nothing of the service is bundled but the two lists of names). The read views are the
 * projections' documents as the API returns them; the rest are the HTTP layer's answer shapes.
 */
import type { InvocationStatusDto } from '../../../src/http/dto/invocation.dto';
import type { OrganizationBalanceDto } from '../../../src/http/dto/balance.dto';
import type { RecordedEventDto, StreamPageDto } from '../../../src/http/dto/stream.dto';
import { INVOCATION_STATUSES, type InvocationStatus as InvocationState } from '../../../src/invocations/invocation.events';
import { OUTCOMES } from '../../../src/runtime/conversation.types';

export type { AttemptHistoryView as AttemptHistory } from '../../../projections/attempts.projection';
export type { ExplanationView as Explanation } from '../../../projections/explanations.projection';
export type { RoutingBudgetsView as RoutingBudgets, RoutingBudgetVersion as PublicationWindow } from '../../../projections/routing-budgets.projection';
export type { AttemptRecord as AttemptRow } from '../../../src/runtime/conversation.types';

export { INVOCATION_STATUSES, OUTCOMES, type InvocationState };

/** `GET /v1/invocations/:id` */
export type InvocationStatus = InvocationStatusDto;
/** `GET /v1/organizations/:id/balance` */
export type Balance = OrganizationBalanceDto;
/** `GET /v1/streams/:streamName`, and one event of it. */
export type StreamPage = StreamPageDto;
export type LoggedEvent = RecordedEventDto;

/** A state after which nothing more happens to an invocation. */
export function isFinal(state: string): boolean {
  return state === 'refused' || state === 'settled';
}

/** Token counts by kind, whatever kinds the API reports (uncached input, output, cache writes, …). */
export function usageByKind(usage: object): ReadonlyArray<readonly [string, number]> {
  return Object.entries(usage).filter((entry): entry is [string, number] => typeof entry[1] === 'number');
}

/*
 * The organization reads (`…/invocations`, `…/ledger`, `…/usage`), as SPEC §10 lists them and the
 * service answers them.
 */

/** One invocation in `GET /v1/organizations/:id/invocations`. */
export interface InvocationListEntry {
  readonly invocationId: string;
  readonly organizationId: string;
  readonly operationId: string;
  readonly state: InvocationState;
  readonly publicationVersion?: number;
  readonly estimate: number;
  readonly charge: number;
  readonly outcome?: string;
  readonly refusalReason?: string;
  readonly estimatedAt: string;
  readonly settledAt?: string;
}

export interface InvocationPage {
  readonly invocations: readonly InvocationListEntry[];
  readonly nextCursor: string | null;
}

/** One movement of credits in `GET /v1/organizations/:id/ledger`. */
export interface LedgerEntry {
  readonly sequence: string;
  readonly kind: string;
  readonly credits: number;
  readonly invocationId?: string;
  readonly idempotencyKey?: string;
  readonly reason?: string;
  readonly at: string;
  readonly availableAfter: number;
}

export interface LedgerEntryPage {
  readonly entries: readonly LedgerEntry[];
  readonly nextCursor: string | null;
}

/** One row of `GET /v1/organizations/:id/usage`, with the keys it was grouped by. */
export interface UsageStatementRow {
  readonly day?: string;
  readonly operationId?: string;
  readonly model?: string;
  readonly credits: number;
  readonly settled: number;
}

export interface UsageStatement {
  readonly from: string;
  readonly to: string;
  readonly rows: readonly UsageStatementRow[];
  readonly totals: UsageStatementRow;
}
