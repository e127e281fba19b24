import type { IEvent } from '@nestjs/cqrs';
import type {
  AlertThresholdsSet as AlertThresholdsSetEvent,
  CreditThresholdCrossed as CreditThresholdCrossedEvent,
  CreditsAdjusted as CreditsAdjustedEvent,
  CreditsGranted as CreditsGrantedEvent,
  GatewayKeyChanged as GatewayKeyChangedEvent,
  GatewayKeyIssued as GatewayKeyIssuedEvent,
  GatewayKeyRevoked as GatewayKeyRevokedEvent,
  GatewayKeyRotated as GatewayKeyRotatedEvent,
  GatewayCallsRejected as GatewayCallsRejectedEvent,
  GatewayTeamCreated as GatewayTeamCreatedEvent,
  GatewayTeamChanged as GatewayTeamChangedEvent,
  GatewayTeamDeleted as GatewayTeamDeletedEvent,
  GatewayBudgetThresholdCrossed as GatewayBudgetThresholdCrossedEvent,
  HoldPlaced as HoldPlacedEvent,
  HoldSettled as HoldSettledEvent,
  OrganizationSettingsChanged as OrganizationSettingsChangedEvent,
  AccountEvent,
} from '../accounts/account.events';
import type { OperationEvent, OperationPublished as OperationPublishedEvent } from '../catalog/operation.events';
import type { EventMetadata, RecordedEvent } from '../event-store/event-store.port';
import type {
  AttemptRecorded as AttemptRecordedEvent,
  InvocationCancellationRequested as InvocationCancellationRequestedEvent,
  InvocationCompleted as InvocationCompletedEvent,
  InvocationDispatched as InvocationDispatchedEvent,
  InvocationEstimated as InvocationEstimatedEvent,
  InvocationFailed as InvocationFailedEvent,
  InvocationPending as InvocationPendingEvent,
  InvocationRefused as InvocationRefusedEvent,
  InvocationReserved as InvocationReservedEvent,
  InvocationSettled as InvocationSettledEvent,
  InvocationEvent,
} from '../invocations/invocation.events';

/**
 * A committed ledger event as Nest's EventBus carries it (docs/embedding.md): one class per event type, named
 * after it, with the event's `data`, its stream, revision and log position. Published only once the
 * event is in the log, so an @EventsHandler never reacts to something a crash could undo.
 */
export abstract class LedgerEvent<Data = unknown> implements IEvent {
  abstract readonly type: string;
  // Declared, not initialised: a class field would define each property once more before the
  // constructor sets it, and one of these is built for every event the log commits.
  declare readonly data: Data;
  declare readonly metadata: EventMetadata;
  declare readonly streamName: string;
  declare readonly revision: bigint;
  declare readonly position: bigint;
  declare readonly recordedAt: string;

  constructor(event: RecordedEvent) {
    this.data = event.data as Data;
    this.metadata = event.metadata;
    this.streamName = event.streamName;
    this.revision = event.revision;
    this.position = event.position;
    this.recordedAt = event.recordedAt;
  }
}

export class InvocationEstimated extends LedgerEvent<InvocationEstimatedEvent['data']> {
  readonly type = 'InvocationEstimated';
}
export class InvocationRefused extends LedgerEvent<InvocationRefusedEvent['data']> {
  readonly type = 'InvocationRefused';
}
export class InvocationReserved extends LedgerEvent<InvocationReservedEvent['data']> {
  readonly type = 'InvocationReserved';
}
export class InvocationDispatched extends LedgerEvent<InvocationDispatchedEvent['data']> {
  readonly type = 'InvocationDispatched';
}
export class AttemptRecorded extends LedgerEvent<AttemptRecordedEvent['data']> {
  readonly type = 'AttemptRecorded';
}
export class InvocationCompleted extends LedgerEvent<InvocationCompletedEvent['data']> {
  readonly type = 'InvocationCompleted';
}
export class InvocationFailed extends LedgerEvent<InvocationFailedEvent['data']> {
  readonly type = 'InvocationFailed';
}
export class InvocationPending extends LedgerEvent<InvocationPendingEvent['data']> {
  readonly type = 'InvocationPending';
}
export class InvocationSettled extends LedgerEvent<InvocationSettledEvent['data']> {
  readonly type = 'InvocationSettled';
}
export class InvocationCancellationRequested extends LedgerEvent<InvocationCancellationRequestedEvent['data']> {
  readonly type = 'InvocationCancellationRequested';
}
export class CreditsGranted extends LedgerEvent<CreditsGrantedEvent['data']> {
  readonly type = 'CreditsGranted';
}
export class CreditsAdjusted extends LedgerEvent<CreditsAdjustedEvent['data']> {
  readonly type = 'CreditsAdjusted';
}
export class OrganizationSettingsChanged extends LedgerEvent<OrganizationSettingsChangedEvent['data']> {
  readonly type = 'OrganizationSettingsChanged';
}
export class HoldPlaced extends LedgerEvent<HoldPlacedEvent['data']> {
  readonly type = 'HoldPlaced';
}
export class HoldSettled extends LedgerEvent<HoldSettledEvent['data']> {
  readonly type = 'HoldSettled';
}
export class AlertThresholdsSet extends LedgerEvent<AlertThresholdsSetEvent['data']> {
  readonly type = 'AlertThresholdsSet';
}
export class CreditThresholdCrossed extends LedgerEvent<CreditThresholdCrossedEvent['data']> {
  readonly type = 'CreditThresholdCrossed';
}
export class OperationPublished extends LedgerEvent<OperationPublishedEvent['data']> {
  readonly type = 'OperationPublished';
}
export class GatewayKeyIssued extends LedgerEvent<GatewayKeyIssuedEvent['data']> {
  readonly type = 'GatewayKeyIssued';
}
export class GatewayKeyChanged extends LedgerEvent<GatewayKeyChangedEvent['data']> {
  readonly type = 'GatewayKeyChanged';
}
export class GatewayKeyRevoked extends LedgerEvent<GatewayKeyRevokedEvent['data']> {
  readonly type = 'GatewayKeyRevoked';
}
export class GatewayKeyRotated extends LedgerEvent<GatewayKeyRotatedEvent['data']> {
  readonly type = 'GatewayKeyRotated';
}
export class GatewayCallsRejected extends LedgerEvent<GatewayCallsRejectedEvent['data']> {
  readonly type = 'GatewayCallsRejected';
}
export class GatewayTeamCreated extends LedgerEvent<GatewayTeamCreatedEvent['data']> {
  readonly type = 'GatewayTeamCreated';
}
export class GatewayTeamChanged extends LedgerEvent<GatewayTeamChangedEvent['data']> {
  readonly type = 'GatewayTeamChanged';
}
export class GatewayTeamDeleted extends LedgerEvent<GatewayTeamDeletedEvent['data']> {
  readonly type = 'GatewayTeamDeleted';
}
export class GatewayBudgetThresholdCrossed extends LedgerEvent<GatewayBudgetThresholdCrossedEvent['data']> {
  readonly type = 'GatewayBudgetThresholdCrossed';
}

type LedgerEventClass = new (event: RecordedEvent) => LedgerEvent;
type PublishedEventType = InvocationEvent['type'] | AccountEvent['type'] | OperationEvent['type'];

// A record over every event type, so a new type without its class does not compile.
const CLASS_OF: Record<PublishedEventType, LedgerEventClass> = {
  InvocationEstimated,
  InvocationRefused,
  InvocationReserved,
  InvocationDispatched,
  AttemptRecorded,
  InvocationCompleted,
  InvocationFailed,
  InvocationPending,
  InvocationSettled,
  InvocationCancellationRequested,
  CreditsGranted,
  CreditsAdjusted,
  OrganizationSettingsChanged,
  HoldPlaced,
  HoldSettled,
  AlertThresholdsSet,
  CreditThresholdCrossed,
  GatewayKeyIssued,
  GatewayKeyChanged,
  GatewayKeyRevoked,
  GatewayKeyRotated,
  GatewayCallsRejected,
  GatewayTeamCreated,
  GatewayTeamChanged,
  GatewayTeamDeleted,
  GatewayBudgetThresholdCrossed,
  OperationPublished,
};

/** The class of each published event type; other types in the log (snapshots) are not published. */
export const LEDGER_EVENT_CLASSES: ReadonlyMap<string, LedgerEventClass> = new Map(Object.entries(CLASS_OF));
