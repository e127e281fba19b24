/**
 * Reads what the accounting needs from a Messages event stream as its bytes pass through the relay,
 * without copying or decoding the bulk of it: the bytes are relayed as they arrived, and only the
 * data of `message_start`, `message_delta` and `error` events (a few hundred bytes each) is decoded
 * and parsed. A `content_block_delta`'s data (the answer's text) is skipped byte by byte, never
 * turned into a string. Lines follow the SSE format: `event:` and `data:` fields, a blank line ends
 * an event, `\n` or `\r\n` ends a line. It also tells the relay where the stream's last event
 * (`message_stop`, or an `error`) begins, so the relay can hold it back until the call is settled
 * (docs/gateway.md, Settlement).
 */

/**
 * Longest line of a kept event read, in bytes. A `message_start`'s data is a message without content
 * (well under 4 KiB); past this bound the line is dropped rather than grown without end.
 */
export const MAX_SSE_KEPT_LINE_BYTES = 1024 * 1024;

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;
const SPACE = 0x20;
const DATA = Buffer.from('data:');
const EVENT = Buffer.from('event:');

/** Events whose data is read; every other event's data is skipped. */
const KEPT_EVENTS: ReadonlySet<string> = new Set(['message_start', 'message_delta', 'error']);
/** The event names told apart, matched on the bytes so no other event's name becomes a string. */
const NAMED_EVENTS: readonly (readonly [string, Buffer])[] = ['message_start', 'message_delta', 'message_stop', 'error'].map((name) => [name, Buffer.from(name)]);
/** The name of every other event (`content_block_delta`, `ping`, …): its data is skipped. */
const OTHER_EVENT = '';

/** What the stream said that the accounting needs, in the API's own field names. */
export interface StreamReport {
  /** `message_start`'s `message.usage`, with each non-null field of the last `message_delta`'s `usage` over it. */
  usage?: Record<string, unknown>;
  model?: string;
  stopReason?: string;
  /** An `error` event's `error.type` and `error.message`. */
  error?: { readonly type?: string; readonly message?: string };
  /** `message_stop` arrived: the answer is complete. */
  stopped: boolean;
}

type LineState = 'start' | 'skip' | 'keep';

export class SseUsageReader {
  readonly report: StreamReport = { stopped: false };
  private state: LineState = 'start';
  /** Bytes of the current line while it is kept, or while too few have come to tell its field. */
  private partial: Buffer | undefined;
  /** The current event's name, once its `event:` line has come. */
  private eventName: string | undefined;
  private data: string | undefined;
  /** Where the current line began in the chunk being fed (0 when it began in an earlier one). */
  private lineAt = 0;
  /** Where the last event's `event:` line began in the chunk being fed, or -1. */
  private stopAt = -1;
  private lastEventSeen = false;

  /** True between events: the bytes relayed so far end with a blank line (or nothing came yet). */
  get atEventBoundary(): boolean {
    return this.state === 'start' && this.partial === undefined && this.eventName === undefined && this.data === undefined;
  }

  /**
   * Reads a chunk; returns where in it the stream's last event begins (the first `message_stop` or
   * `error` event's `event:` line, or 0 when that line began in an earlier chunk), or -1 when it does
   * not begin in this one.
   */
  feed(chunk: Buffer): number {
    let at = 0;
    this.stopAt = -1;
    while (at < chunk.length) {
      const newline = chunk.indexOf(NEWLINE, at);
      const end = newline === -1 ? chunk.length : newline;
      this.lineAt = this.partial === undefined ? at : 0;
      if (this.state === 'skip') {
        if (newline !== -1) this.state = 'start';
      } else if (this.partial === undefined && newline !== -1) {
        this.line(chunk.subarray(at, end));
      } else {
        this.gather(chunk.subarray(at, end), newline !== -1);
      }
      if (newline === -1) break;
      at = newline + 1;
    }
    return this.stopAt;
  }

  /** A piece of a line that did not arrive whole; `complete` when its newline came with it. */
  private gather(piece: Buffer, complete: boolean): void {
    const line = this.partial === undefined ? piece : Buffer.concat([this.partial, piece]);
    this.partial = undefined;
    if (complete) {
      this.state = 'start';
      this.line(line);
      return;
    }
    const decision = this.decide(line);
    if (decision === 'keep' && line.length <= MAX_SSE_KEPT_LINE_BYTES) {
      // A piece of the chunk is copied: the chunk is relayed and may be reused once written.
      this.partial = line === piece ? Buffer.from(piece) : line;
      this.state = 'keep';
    } else {
      this.state = 'skip';
      // A kept line past its bound: the event cannot be read, so the rest of it is skipped too.
      if (decision === 'keep') {
        this.eventName = OTHER_EVENT;
        this.data = undefined;
      }
    }
  }

  /** Whether a line's beginning must be kept to be read: a kept event's data, a field still unknown. */
  private decide(start: Buffer): 'keep' | 'skip' {
    if (startsWith(start, DATA)) return this.eventName === undefined || KEPT_EVENTS.has(this.eventName) ? 'keep' : 'skip';
    if (startsWith(start, EVENT)) return 'keep';
    // A `\r` whose `\n` is in the next chunk may end a blank line, which ends an event.
    if (start.length === 1 && start[0] === CARRIAGE_RETURN) return 'keep';
    return start.length < EVENT.length && (DATA.subarray(0, start.length).equals(start) || EVENT.subarray(0, start.length).equals(start)) ? 'keep' : 'skip';
  }

  private line(raw: Buffer): void {
    const line = raw.length > 0 && raw[raw.length - 1] === CARRIAGE_RETURN ? raw.subarray(0, raw.length - 1) : raw;
    if (line.length === 0) {
      this.dispatch();
      return;
    }
    if (startsWith(line, EVENT)) {
      this.eventName = eventNameOf(line);
      // The stream's last event (message_stop, or an error that ends it) waits for the settlement.
      if ((this.eventName === 'message_stop' || this.eventName === 'error') && !this.lastEventSeen) {
        this.lastEventSeen = true;
        this.stopAt = this.lineAt;
      }
    } else if (startsWith(line, DATA) && (this.eventName === undefined || KEPT_EVENTS.has(this.eventName))) {
      const value = fieldValue(line, DATA.length);
      this.data = this.data === undefined ? value : `${this.data}\n${value}`;
    }
  }

  private dispatch(): void {
    const name = this.eventName;
    const data = this.data;
    this.eventName = undefined;
    this.data = undefined;
    if (name === 'message_stop') this.report.stopped = true;
    if (name === undefined || data === undefined || !KEPT_EVENTS.has(name)) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      return;
    }
    if (typeof parsed !== 'object' || parsed === null) return;
    this.read(name, parsed as Record<string, unknown>);
  }

  private read(name: string, event: Record<string, unknown>): void {
    const report = this.report;
    if (name === 'message_start') {
      const message = objectOf(event.message);
      if (typeof message?.model === 'string') report.model = message.model;
      const usage = objectOf(message?.usage);
      if (usage !== undefined) report.usage = { ...usage };
    } else if (name === 'message_delta') {
      const stopReason = objectOf(event.delta)?.stop_reason;
      if (typeof stopReason === 'string') report.stopReason = stopReason;
      const usage = objectOf(event.usage);
      if (usage === undefined) return;
      // The delta's counts are cumulative: each one it gives replaces message_start's.
      const merged = report.usage ?? {};
      for (const key in usage) if (usage[key] !== null && usage[key] !== undefined) merged[key] = usage[key];
      report.usage = merged;
    } else {
      const error = objectOf(event.error);
      report.error = {
        ...(typeof error?.type === 'string' ? { type: error.type } : {}),
        ...(typeof error?.message === 'string' ? { message: error.message } : {}),
      };
    }
  }
}

function startsWith(line: Buffer, prefix: Buffer): boolean {
  return line.length >= prefix.length && line.compare(prefix, 0, prefix.length, 0, prefix.length) === 0;
}

/** Where a field's value starts: after its colon, less one leading space (as the SSE format says). */
function valueStart(line: Buffer, colonEnd: number): number {
  return line[colonEnd] === SPACE ? colonEnd + 1 : colonEnd;
}

function fieldValue(line: Buffer, colonEnd: number): string {
  return line.toString('utf8', valueStart(line, colonEnd));
}

function eventNameOf(line: Buffer): string {
  const from = valueStart(line, EVENT.length);
  for (const [name, bytes] of NAMED_EVENTS) {
    if (line.length - from === bytes.length && line.compare(bytes, 0, bytes.length, from) === 0) return name;
  }
  return OTHER_EVENT;
}

function objectOf(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
