/**
 * Every batch the gateway created, in one stream (`gateway-batches-index`): what a key's list reads (its
 * organization's batches, newest first) and what the poller of ended batches walks (those not yet
 * settled). One small event per batch created, settled or deleted; a batch's own record is its stream.
 */
import type { Decider, DomainCommand, DomainEvent } from '../../domain/decider';

export const GATEWAY_BATCH_INDEX_STREAM = 'gateway-batches-index';

export type GatewayBatchIndexed = DomainEvent<'GatewayBatchIndexed', { readonly batchId: string; readonly organizationId: string; readonly createdAt: string }>;
export type GatewayBatchIndexSettled = DomainEvent<'GatewayBatchIndexSettled', { readonly batchId: string }>;
export type GatewayBatchIndexDeleted = DomainEvent<'GatewayBatchIndexDeleted', { readonly batchId: string }>;
export type GatewayBatchIndexEvent = GatewayBatchIndexed | GatewayBatchIndexSettled | GatewayBatchIndexDeleted;

export type GatewayBatchIndexCommand =
  | DomainCommand<'IndexBatch', GatewayBatchIndexed['data']>
  | DomainCommand<'NoteBatchSettled', { readonly batchId: string }>
  | DomainCommand<'NoteBatchDeleted', { readonly batchId: string }>;

export interface IndexedBatch {
  readonly batchId: string;
  readonly organizationId: string;
  readonly createdAt: string;
  readonly settled: boolean;
  readonly deleted: boolean;
}

export interface GatewayBatchIndexState {
  /** batchId → the batch, in the order created. */
  readonly batches: ReadonlyMap<string, IndexedBatch>;
}

function decide(command: GatewayBatchIndexCommand, state: GatewayBatchIndexState): GatewayBatchIndexEvent[] {
  const known = state.batches.get(command.data.batchId);
  switch (command.type) {
    case 'IndexBatch':
      return known === undefined ? [{ type: 'GatewayBatchIndexed', data: command.data }] : [];
    case 'NoteBatchSettled':
      return known !== undefined && !known.settled ? [{ type: 'GatewayBatchIndexSettled', data: command.data }] : [];
    case 'NoteBatchDeleted':
      return known !== undefined && !known.deleted ? [{ type: 'GatewayBatchIndexDeleted', data: command.data }] : [];
  }
}

function evolve(state: GatewayBatchIndexState, event: GatewayBatchIndexEvent): GatewayBatchIndexState {
  const batches = new Map(state.batches);
  const known = batches.get(event.data.batchId);
  if (event.type === 'GatewayBatchIndexed') batches.set(event.data.batchId, { ...event.data, settled: false, deleted: false });
  else if (known !== undefined) batches.set(known.batchId, { ...known, ...(event.type === 'GatewayBatchIndexSettled' ? { settled: true } : { deleted: true }) });
  return { batches };
}

export const gatewayBatchIndexDecider: Decider<GatewayBatchIndexCommand, GatewayBatchIndexEvent, GatewayBatchIndexState> = {
  decide,
  evolve,
  initialState: () => ({ batches: new Map() }),
};
