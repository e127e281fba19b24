/**
 * Timings the accounting core publishes for the metrics, on Node's diagnostics channels: publishing
 * costs nothing while nobody listens, and the core imports no metrics library. The core owns the
 * channels; the observability room subscribes to them.
 */
import { channel } from 'node:diagnostics_channel';

/** One append made by a command (AggregateRepository): `{ durationMs }`. */
export interface AppendTiming {
  readonly durationMs: number;
}

/** One invocation run in this process: its time outside the provider and the tools. */
export interface InvocationOverheadTiming {
  readonly operationId: string;
  readonly overheadMs: number;
}

export const appendTimingChannel = channel('llm-ledger:append');
export const invocationOverheadChannel = channel('llm-ledger:invocation-overhead');
