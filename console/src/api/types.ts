/**
 * What the console reads, typed by the service's own definitions of the API's answers (type-only
 * imports: nothing of the service is bundled but a few lists of names). The read views are the
 * projections' documents as the API returns them; the rest are the HTTP layer's answer shapes.
 */
import type { GatewayKeyView } from '../../../src/gateway/gateway-admin.service';
import type { GatewayTeamView } from '../../../src/gateway/gateway-teams.service';
import type { InvocationStatusDto } from '../../../src/http/dto/invocation.dto';
import type { OrganizationBalanceDto } from '../../../src/http/dto/balance.dto';
import type { RecordedEventDto, StreamPageDto } from '../../../src/http/dto/stream.dto';
import { INVOCATION_STATUSES, type InvocationStatus as InvocationState } from '../../../src/invocations/invocation.events';
import { OUTCOMES } from '../../../src/runtime/conversation.types';
import { USAGE_KINDS } from '../../../src/runtime/price-kinds';

export type { AttemptHistoryView as AttemptHistory } from '../../../projections/attempts.projection';
export type { ExplanationView as Explanation, ExplanationGateway } from '../../../projections/explanation.view';
export type { RoutingBudgetsView as RoutingBudgets, RoutingBudgetVersion as PublicationWindow } from '../../../projections/routing-budgets.projection';
export type { AttemptRecord as AttemptRow } from '../../../src/runtime/conversation.types';

export { INVOCATION_STATUSES, OUTCOMES, type InvocationState };
/** The periods a key's spend limit may count, and the reasons a key's call is refused before its hold. */
export { GATEWAY_REJECTION_REASONS, SPEND_PERIODS, type SpendPeriod } from '../../../src/accounts/gateway-keys';
/** `POST …/gateway-keys` and `PATCH …/gateway-keys/:keyId`: a key's settings, whole. */
export type { GatewayKeySettings } from '../../../src/accounts/gateway-keys';

/** `GET /v1/invocations/:id` */
export type InvocationStatus = InvocationStatusDto;
/**
 * With LEDGER_CREDIT_VALUE set, an answer's credit figures in money beside them (docs/http.md "Money
 * beside credits"): the currency, and each figure as the exact decimal string of its credits × the value.
 */
export type Money<Figure extends string> = { readonly currency: string } & Readonly<Record<Figure, string>>;
/** One key of `GET /v1/organizations/:id/gateway-keys` (system and org_admin only). */
export type GatewayKey = GatewayKeyView & { readonly money?: Money<'spentCredits' | 'heldCredits'> };
/** The answer of `POST …/gateway-keys`: the key, with its secret shown this once. */
export type IssuedGatewayKey = GatewayKeyView & { readonly key: string };
/** One team of `GET /v1/organizations/:id/teams` (system and org_admin only). */
export type GatewayTeam = GatewayTeamView & { readonly money?: Money<'spentCredits' | 'heldCredits'> };
/** `GET /v1/organizations/:id/balance` */
export type Balance = OrganizationBalanceDto;
/** `GET /v1/streams/:streamName`, and one event of it. */
export type StreamPage = StreamPageDto;
export type LoggedEvent = RecordedEventDto;
/** One message's `data` of `GET /v1/invocations/:id/events`. */
export type { InvocationProgress } from '../../../src/http/invocation-progress';

/** A state after which nothing more happens to an invocation. */
export function isFinal(state: string): boolean {
  return state === 'refused' || state === 'settled';
}

/**
 * Counts by kind, one per row of the service's price-kind table, in its order (uncached input,
 * output, cache writes, …); a kind the answer lacks reads 0.
 */
export function usageByKind(usage: object): ReadonlyArray<readonly [string, number]> {
  const counts = usage as Readonly<Record<string, unknown>>;
  return USAGE_KINDS.map((kind) => [kind, typeof counts[kind] === 'number' ? (counts[kind] as number) : 0] as const);
}

/* The organization reads: `…/invocations`, `…/ledger` and `…/usage` (docs/http.md). */
export type { InvocationListEntry } from '../../../projections/invocation-list.projection';
export type { LedgerEntryView as LedgerEntry } from '../../../projections/ledger-entries.projection';
export type { InvocationPage } from '../../../src/queries/list-invocations.query';
export type { LedgerEntryPage } from '../../../src/queries/list-ledger-entries.query';
export type { UsageStatement, UsageStatementRow } from '../../../src/queries/get-usage.query';

/** `GET /v1/me`: who the signed-in token is. */
export type { MeDto as Me } from '../../../src/http/dto/me.dto';

/* Message Batches: `GET …/gateway-batches` and `GET …/gateway-batches/:batchId/requests` (docs/http.md). */
import type { BatchExplanation, BatchRequestExplanation } from '../../../src/gateway/batches/batch-explanation';
export type { BatchExplanation, BatchRequestExplanation };
export interface BatchList {
  readonly batches: readonly BatchExplanation[];
  readonly nextAfter: string | null;
}
export interface BatchRequestList {
  readonly requests: readonly BatchRequestExplanation[];
  readonly nextAfter: string | null;
}
