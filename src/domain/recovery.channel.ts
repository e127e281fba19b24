/**
 * What recovery finished, published by the accounting core on a Node diagnostics channel (as its
 * timings are, timing.channels.ts): the metrics count it, and the core imports no metrics library.
 * The core owns the channel; the observability room subscribes to it.
 */
import { channel } from 'node:diagnostics_channel';

/** `count` leftovers of one kind finished by one recovery pass of this instance (RecoveredKind). */
export interface RecoveredMessage {
  readonly kind: string;
  readonly count: number;
}

export const recoveredChannel = channel('llm-ledger:recovered');
