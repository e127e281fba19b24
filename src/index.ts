/**
 * llm-ledger's public surface: what a NestJS application imports from `llm-ledger` (docs/embedding.md).
 * Nothing else is importable from the package; everything here is supported.
 */

// The module and its options.
export { LedgerModule, LEDGER_MODULE_OPTIONS } from './composition/ledger.module';
export type { LedgerHttpOptions, LedgerModuleExtras, LedgerModuleOptions } from './composition/ledger-module.options';
export { ConfigurationError } from './config/ledger.config';
export type { ProjectionsThread, Role, TokenGrant } from './config/ledger.config';
export type { SqliteSynchronous } from './event-store/sqlite/sqlite-synchronous';

// Registering operations.
export { LedgerFeaturesModule } from './features/ledger-features.module';
export { InvalidFeatureInputError } from './features/operation-feature';
export type { OperationFeature, PreparedConversation } from './features/operation-feature';
export { MAX_ANSWER_RETENTION_MS } from './answer-store/answer-store.port';

// Commands and their results.
export { RunOperationCommand } from './invocations/run-operation.command';
export type { RunOperationRequest } from './invocations/run-operation.command';
export type { AnswerUnavailableReason, InvocationResult } from './invocations/invocation-result';
export type { InvocationSummary } from './invocations/invocation.state';
export type { InvocationStatus } from './invocations/invocation.events';
export { PublishOperationCommand } from './catalog/publish-operation.command';
export type { PublicationRequest, PublishedVersion } from './catalog/publish-operation.command';
export type { Routing } from './catalog/operation.events';
export { AdjustCreditsCommand, ChangeOrganizationSettingsCommand, GrantCreditsCommand } from './accounts/account-commands';
export type { LedgerEntryResult, OrganizationSettings } from './accounts/account-commands';
export { SweepStaleInvocationsCommand } from './invocations/sweep-stale-invocations.command';
export { CancelInvocationCommand } from './invocations/cancel-invocation.command';
export type { CancellationRequested } from './invocations/cancel-invocation.command';
export type { ReleasedHold, SweepReport, SweptInvocation } from './invocations/sweep-stale-invocations.command';

// Queries on the QueryBus, and the read models they answer with.
export { GetAttemptsQuery, GetBalanceQuery, GetExplanationQuery, GetInvocationQuery, GetPublicationsQuery } from './queries/ledger.queries';
export type { AttemptHistoryView, BalanceView, ExplanationView, InvocationView, RoutingBudgetsView } from '../projections';

// Every committed lifecycle and account event, on the EventBus.
export {
  AlertThresholdsSet,
  AttemptRecorded,
  CreditThresholdCrossed,
  CreditsAdjusted,
  CreditsGranted,
  HoldPlaced,
  HoldSettled,
  InvocationCancellationRequested,
  InvocationCompleted,
  InvocationDispatched,
  InvocationEstimated,
  InvocationFailed,
  InvocationPending,
  InvocationRefused,
  InvocationReserved,
  InvocationSettled,
  LedgerEvent,
  OperationPublished,
  OrganizationSettingsChanged,
} from './ledger-events/ledger-events';

// Domain errors (each DomainError has a machine `code`).
export { DOMAIN_ERROR_CODES, DomainError, IdempotencyConflictError, IllegalTransitionError, ValidationError } from './domain/domain.errors';
export type { DomainErrorCode, FieldIssue } from './domain/domain.errors';
export { AdmissionRefusedError } from './accounts/admission.policy';
export {
  IdempotencyKeyReusedError,
  KeyedRequestInProgressError,
  UnknownInvocationError,
  UnknownOperationError,
  UnknownOrganizationError,
} from './invocations/invocation-errors';
export { MAX_KEYED_REPEAT_WAIT_MS } from './invocations/invocation-endings';

// The runtime's tool and message types, and the scripted provider for a feature's own tests.
export type {
  AnswerToolSpec,
  JudgeContext,
  TextJudge,
  ToolContext,
  ToolEffect,
  ToolSpec,
  Verdict,
} from './runtime/tool.types';
export type {
  CacheTtl,
  ContentBlock,
  Message,
  Provider,
  ProviderBlock,
  ProviderFeatures,
  ProviderRequest,
  ProviderResponse,
  SendOptions,
  StopReason,
  TextBlock,
  ToolDefinition,
  ToolResultBlock,
  ToolUseBlock,
  Usage,
  UsageKind,
} from './runtime/provider.port';
export { USAGE_KINDS } from './runtime/provider.port';
export { OUTCOMES } from './runtime/conversation.types';
export type { AttemptClassification, AttemptRecord, ConversationLimits, EndingLimit, LongContextRates, Prices } from './runtime/conversation.types';
export type { Outcome } from './runtime/conversation.types';
export { priceAttempt } from './runtime/pricing';
export { FAULT_CLASSES, ProviderFault } from './runtime/faults';
export type { FaultClass } from './runtime/faults';
export { ScriptedProvider, scriptedFault, scriptedText, scriptedToolUse } from './runtime/scripted-provider';
export type { ScriptedFault, ScriptedOutcome, ScriptedProviderOptions, ScriptedReply, ScriptedStep } from './runtime/scripted-provider';

// Read queries on the QueryBus (docs/embedding.md): an organization's invocations, ledger entries and usage.
export { ListInvocationsQuery, DEFAULT_INVOCATIONS_PAGE, MAX_INVOCATIONS_PAGE } from './queries/list-invocations.query';
export type { InvocationFilters, InvocationPage } from './queries/list-invocations.query';
export { ListLedgerEntriesQuery, DEFAULT_LEDGER_PAGE, MAX_LEDGER_PAGE } from './queries/list-ledger-entries.query';
export type { LedgerEntryFilters, LedgerEntryPage } from './queries/list-ledger-entries.query';
export { GetUsageQuery, MAX_STATEMENT_DAYS, USAGE_GROUP_BY } from './queries/get-usage.query';
export type { UsageGroupBy, UsagePeriod, UsageStatement, UsageStatementRow } from './queries/get-usage.query';
export { QUERY_CATCH_UP_TIMEOUT_MS, ReadModelsUnavailableError } from './queries/read-model-catch-up';
export type { InvocationListEntry, LedgerEntryKind, LedgerEntryView, StatementOutcome } from '../projections';
