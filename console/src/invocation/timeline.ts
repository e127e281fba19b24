import type { InvocationProgress, InvocationStatus, LoggedEvent } from '../api/types';
import { formatCountOf, formatCredits, formatValue, words } from '../format';

/** One line of an invocation's lifecycle timeline. */
export interface TimelineEntry {
  readonly key: string;
  readonly type: string;
  /** ISO time or ms since the epoch; absent when the source gives none. */
  readonly at?: string | number;
  readonly summary: string;
}

type Data = Readonly<Record<string, unknown>>;

const num = (value: unknown): number | undefined => (typeof value === 'number' ? value : undefined);
const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** `2 turns and 1 tool call`, `1 turn`; a count the event lacks reads as a dash. */
export function turnsAndCalls(turns: number | undefined, toolCalls?: number): string {
  const turnText = turns === undefined ? '— turns' : formatCountOf(turns, 'turn');
  return toolCalls === undefined ? turnText : `${turnText} and ${formatCountOf(toolCalls, 'tool call')}`;
}

function figuresText(data: Data, names: readonly string[]): string {
  return Object.entries(data)
    .filter(([name]) => !names.includes(name))
    .map(([name, value]) => `${words(name)} ${formatValue(value)}`)
    .join(', ');
}

/** What each lifecycle event says, in a short line (the event carries no conversation text). */
function summaryOf(type: string, data: Data, gatewayCall: boolean): string {
  switch (type) {
    case 'InvocationEstimated': {
      const publication = data['publication'] as Data | null | undefined;
      if (publication === null || publication === undefined) return 'the operation was never published';
      const gateway = data['gateway'] as Data | undefined;
      if (gateway !== undefined) return gatewayEstimate(str(gateway['keyName']) ?? '', str(gateway['model']) ?? '', num(publication['version']), num(publication['creditHold']) ?? 0);
      return `publication version ${formatValue(publication['version'])}, hold ${formatCredits(num(publication['creditHold']) ?? 0)}`;
    }
    case 'InvocationRefused': {
      const figures = (data['figures'] ?? {}) as Data;
      return `${str(data['reason']) ?? 'refused'} (transition ${formatValue(data['transition'])}): ${figuresText(figures, [])}`;
    }
    case 'InvocationReserved':
      return `held ${formatCredits(num(data['creditHold']) ?? 0)} and a running slot`;
    case 'InvocationDispatched':
      return dispatchedSummary(gatewayCall);
    case 'AttemptRecorded':
      return `turn ${formatValue(data['turn'])}, try ${(num(data['retry']) ?? 0) + 1}: ${formatValue(data['classification'])}, ${formatCredits(num(data['priceCredits']) ?? 0)}`;
    case 'InvocationCompleted':
      return `${formatValue(data['outcome'])} after ${turnsAndCalls(num(data['turnsUsed']), num(data['toolCallsUsed']))}; spent ${formatCredits(num(data['spentCredits']) ?? 0)}`;
    case 'InvocationFailed':
      return `failed with ${formatValue(data['fault'])} after ${turnsAndCalls(num(data['turnsUsed']))}; spent ${formatCredits(num(data['spentCredits']) ?? 0)}`;
    case 'InvocationPending':
      return 'completed without reported usage: its cost is the estimate';
    case 'InvocationSettled':
      return `transition ${formatValue(data['transition'])} by ${formatValue(data['settledBy'])}: charged ${formatCredits(num(data['chargeCredits']) ?? 0)}, released ${formatCredits(num(data['heldCredits']) ?? 0)} held`;
    default:
      return figuresText(data, []);
  }
}

/** When the event happened by its own figures (`…At`, an attempt's start), else when it was recorded. */
function timeOf(data: Data, recordedAt: string): string | number {
  for (const [name, value] of Object.entries(data)) {
    if (name.endsWith('At') && typeof value === 'string') return value;
  }
  return num(data['startedAtMs']) ?? recordedAt;
}

export function timelineFromEvents(events: readonly LoggedEvent[]): TimelineEntry[] {
  const gatewayCall = events.some((event) => event.type === 'InvocationEstimated' && ((event.data ?? {}) as Data)['gateway'] !== undefined);
  return events.map((event) => {
    const data = (event.data ?? {}) as Data;
    return { key: event.revision, type: event.type, at: timeOf(data, event.recordedAt), summary: summaryOf(event.type, data, gatewayCall) };
  });
}

/** A gateway call's first event: its key, model, rate card version and hold (docs/gateway.md). */
function gatewayEstimate(keyName: string, model: string, rateCardVersion: number | undefined, hold: number): string {
  return `gateway call by key ${JSON.stringify(keyName)} to ${model}, rate card version ${formatValue(rateCardVersion)}, hold ${formatCredits(hold)}`;
}

function dispatchedSummary(gatewayCall: boolean): string {
  return gatewayCall ? 'the call was sent upstream' : 'the request was captured; the conversation starts';
}

/** What each message of the event stream says (its public fields, not the stored event). */
function progressSummaryOf(message: InvocationProgress, gatewayCall: boolean): string {
  switch (message.type) {
    case 'InvocationEstimated':
      if (message.gateway !== undefined) return gatewayEstimate(message.gateway.keyName, message.gateway.model, message.publicationVersion, message.estimate ?? 0);
      return message.publicationVersion === undefined
        ? 'the operation was never published'
        : `publication version ${message.publicationVersion}, hold ${formatCredits(message.estimate ?? 0)}`;
    case 'InvocationRefused':
      return message.refusalReason ?? 'refused';
    case 'InvocationReserved':
      return `held ${formatCredits(message.creditHold ?? 0)} and a running slot`;
    case 'InvocationDispatched':
      return dispatchedSummary(gatewayCall);
    case 'AttemptRecorded': {
      const attempt = message.attempt;
      return attempt === undefined ? 'an attempt' : `turn ${attempt.turn}, try ${attempt.retry + 1}: ${attempt.classification}, ${formatCredits(attempt.priceCredits)}`;
    }
    case 'InvocationCompleted':
      return `${formatValue(message.outcome)} after ${turnsAndCalls(message.turnsUsed, message.toolCallsUsed)}; spent ${formatCredits(message.spentCredits ?? 0)}`;
    case 'InvocationFailed':
      return `failed with ${formatValue(message.fault)} after ${turnsAndCalls(message.turnsUsed)}; spent ${formatCredits(message.spentCredits ?? 0)}`;
    case 'InvocationPending':
      return 'completed without reported usage: its cost is the estimate';
    case 'InvocationSettled':
      return `transition ${formatValue(message.settlementTransition)}: charged ${formatCredits(message.charge ?? 0)}`;
    case 'InvocationCancellationRequested':
      return `${formatValue(message.requestedBy)} asked to stop it`;
    default:
      return message.state;
  }
}

export function timelineFromProgress(messages: readonly InvocationProgress[]): TimelineEntry[] {
  const gatewayCall = messages.some((message) => message.gateway !== undefined);
  return messages.map((message) => ({ key: String(message.revision), type: message.type, at: message.time, summary: progressSummaryOf(message, gatewayCall) }));
}

/** For a token that may not read the log: the two moments the invocation's own view dates. */
export function timelineFromStatus(status: InvocationStatus): TimelineEntry[] {
  const entries: TimelineEntry[] = [];
  if (status.estimatedAt !== undefined) entries.push({ key: 'estimated', type: 'InvocationEstimated', at: status.estimatedAt, summary: `estimate ${formatCredits(status.estimate)}` });
  if (status.settledAt !== undefined) entries.push({ key: 'settled', type: 'InvocationSettled', at: status.settledAt, summary: `charged ${formatCredits(status.charge)}` });
  return entries;
}
