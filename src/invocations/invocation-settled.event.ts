import { Logger } from '@nestjs/common';
import { EventsHandler, IEvent, IEventHandler } from '@nestjs/cqrs';
import { activeTraceFields } from '../observability/invocation-telemetry';
import type { InvocationSummary } from './invocation.state';

/** Published on the in-process EventBus once an invocation is settled and its hold released. */
export class InvocationSettledEvent implements IEvent {
  constructor(
    readonly organizationId: string,
    readonly operationId: string,
    readonly summary: InvocationSummary,
  ) {}
}

/** One structured log line per settled invocation: figures only, never a conversation body. */
@EventsHandler(InvocationSettledEvent)
export class LogSettledInvocationHandler implements IEventHandler<InvocationSettledEvent> {
  private readonly logger = new Logger('Invocations');

  handle({ organizationId, operationId, summary }: InvocationSettledEvent): void {
    // Published inside the invocation's span, so the line names its trace when tracing is on.
    this.logger.log({ message: 'invocation settled', organizationId, operationId, ...summary, ...activeTraceFields() });
  }
}
