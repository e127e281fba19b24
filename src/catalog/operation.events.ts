/**
 * Events of the operation catalog (docs/http.md, the publications routes). Stream:
 * `operation-<operationId>`. A publication is never edited: each change is a new, numbered
 * OperationPublished, and the event holds the whole version so the historical-routing-budgets
 * projection needs nothing else.
 */
import type { DomainEvent } from '../domain/decider';
import type { ConversationLimits, Prices } from '../runtime/conversation.types';

/** Providers a publication may route to. There is no fallback between them (BR-CAP-PFM-LLM-002-13). */
export const PROVIDERS = ['anthropic', 'scripted'] as const;
export type ProviderName = (typeof PROVIDERS)[number];

export interface Routing {
  readonly provider: ProviderName;
  readonly model: string;
}

/** One immutable version of an operation, as it is copied into each invocation it admits. */
export interface Publication {
  /** 1-based; each publication is the previous version plus one. */
  readonly version: number;
  readonly routing: Routing;
  /** Complete: `maxAttemptsPerTurn` is filled in with its default when the publisher left it out. */
  readonly limits: ConversationLimits;
  /** The rate version: integer credits per million tokens. */
  readonly prices: Prices;
  /** Integer credits held at admission: the conversation's credit budget and its estimate. */
  readonly creditHold: number;
  /** The operation switch; a disabled publication refuses admission with `operation_disabled`. */
  readonly enabled: boolean;
  /** ISO-8601; the start of this version's window (it ends where the next version's starts). */
  readonly publishedAt: string;
}

export type OperationPublished = DomainEvent<'OperationPublished', { readonly operationId: string } & Publication>;

export type OperationEvent = OperationPublished;

export function operationStreamName(operationId: string): string {
  return `operation-${operationId}`;
}
