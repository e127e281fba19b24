import { Injectable } from '@nestjs/common';
import { EventsHandler, type IEventHandler } from '@nestjs/cqrs';
import { InvocationSettled } from 'llm-ledger';

/** What the desk learnt from the ledger's events: each settled invocation's charge. */
@Injectable()
export class SettledInvocations {
  readonly charges = new Map<string, number>();
  private readonly waiters = new Map<string, (charge: number) => void>();

  record(streamName: string, charge: number): void {
    this.charges.set(streamName, charge);
    this.waiters.get(streamName)?.(charge);
  }

  /** Resolves once the invocation's InvocationSettled has been handled. */
  chargeOf(invocationId: string): Promise<number> {
    const streamName = `invocation-${invocationId}`;
    const known = this.charges.get(streamName);
    if (known !== undefined) return Promise.resolve(known);
    return new Promise((resolve) => this.waiters.set(streamName, resolve));
  }
}

/** Reacts to settlements as any consuming module would: after they committed. */
@EventsHandler(InvocationSettled)
export class SettledListener implements IEventHandler<InvocationSettled> {
  constructor(private readonly settled: SettledInvocations) {}

  handle(event: InvocationSettled): void {
    this.settled.record(event.streamName, event.data.chargeCredits);
  }
}
