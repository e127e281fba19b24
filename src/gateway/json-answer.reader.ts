/**
 * Reads what the accounting needs from a non-streamed answer as its bytes pass through the relay,
 * without keeping the answer: a scan of the JSON's structure that keeps only the top-level members it
 * is asked for (`usage`, `model`, `stop_reason`, `error`: a few hundred bytes each) and parses each
 * once it ended. Everything else (the `content`, however long) is skipped; its strings are jumped over
 * with `indexOf`, never decoded. So an answer of any size is priced from its usage at the cost of one
 * pass over its bytes, where parsing it whole would keep all of it and build every string in it
 * (measured in docs/gateway.md, "Relaying").
 *
 * The scan trusts the answer to be JSON (Anthropic's, relayed unchanged): it tells an object at the top
 * from anything else and a complete one from a cut one, and does not validate the rest.
 */

/** Longest top-level member value kept to be read, in bytes: a longer one is read as absent. */
export const MAX_JSON_KEPT_MEMBER_BYTES = 1024 * 1024;
/** Longest member name kept to be compared, in bytes (quotes included): a longer one is no name wanted. */
const MAX_JSON_NAME_BYTES = 256;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

/** Where the scan is, relative to the top-level object's members. */
type Place = 'before' | 'member' | 'name' | 'colon' | 'valueStart' | 'value' | 'done' | 'invalid';

/** Bytes kept across chunks from an index of the current one, up to a bound. */
class Capture {
  from = -1;
  private pieces: Buffer[] = [];
  private bytes = 0;

  constructor(private readonly limit: number) {}

  get active(): boolean {
    return this.from !== -1;
  }

  begin(at: number): void {
    this.from = at;
    this.pieces = [];
    this.bytes = 0;
  }

  /** The chunk ends while capturing: its bytes are copied (the relay may reuse the chunk). */
  carry(chunk: Buffer): void {
    if (!this.active) return;
    this.add(chunk.subarray(this.from));
    this.from = 0;
  }

  /** Ends the capture at `end` (exclusive); the text, or undefined past the bound. */
  end(chunk: Buffer, end: number): string | undefined {
    this.add(chunk.subarray(this.from, end));
    this.from = -1;
    const text = this.bytes <= this.limit ? Buffer.concat(this.pieces, this.bytes).toString('utf8') : undefined;
    this.pieces = [];
    return text;
  }

  private add(piece: Buffer): void {
    this.bytes += piece.length;
    if (this.bytes <= this.limit) this.pieces.push(Buffer.from(piece));
  }
}

export class JsonAnswerReader {
  private place: Place = 'before';
  /** Nesting depth inside the current member's value (0: the value is a scalar or a string). */
  private depth = 0;
  private inString = false;
  private escaped = false;
  private scalar = false;
  private readonly name = new Capture(MAX_JSON_NAME_BYTES);
  private readonly value = new Capture(MAX_JSON_KEPT_MEMBER_BYTES);
  private valueName: string | undefined;
  private readonly members = new Map<string, unknown>();
  /** Where the current chunk's next quote and backslash are (its length when none), once looked for. */
  private nextQuote = -1;
  private nextBackslash = -1;

  constructor(private readonly wanted: ReadonlySet<string>) {}

  /** The wanted members of a complete top-level object, or undefined (not an object, or cut short). */
  get answer(): Record<string, unknown> | undefined {
    return this.place === 'done' ? Object.fromEntries(this.members) : undefined;
  }

  feed(chunk: Buffer): void {
    let at = 0;
    this.nextQuote = -1;
    this.nextBackslash = -1;
    while (at < chunk.length && this.place !== 'invalid') {
      if (this.inString) at = this.skipString(chunk, at);
      else if (this.place === 'value') at = this.valueByte(chunk, at);
      else at = this.betweenMembers(chunk, at);
    }
    this.name.carry(chunk);
    this.value.carry(chunk);
  }

  /** One byte outside any member's value; returns where the scan goes on. */
  private betweenMembers(chunk: Buffer, at: number): number {
    const byte = chunk[at]!;
    if (isSpace(byte)) return at + 1;
    switch (this.place) {
      case 'before':
        this.place = byte === OPEN_BRACE ? 'member' : 'invalid';
        break;
      case 'member':
        if (byte === QUOTE) {
          this.place = 'name';
          this.inString = true;
          this.name.begin(at);
        } else if (byte === CLOSE_BRACE) this.place = 'done';
        else if (byte !== COMMA) this.place = 'invalid';
        break;
      case 'colon':
        this.place = byte === COLON ? 'valueStart' : 'invalid';
        break;
      case 'valueStart':
        this.place = 'value';
        if (this.valueName !== undefined) this.value.begin(at);
        // The value's first byte is read as part of it.
        return at;
      default:
        this.place = 'invalid';
    }
    return at + 1;
  }

  /** One byte of a member's value (a string's content is skipped by skipString). */
  private valueByte(chunk: Buffer, at: number): number {
    const byte = chunk[at]!;
    if (this.scalar) {
      if (byte !== COMMA && byte !== CLOSE_BRACE && !isSpace(byte)) return at + 1;
      this.scalar = false;
      this.valueEnded(chunk, at);
      // The byte that ended a scalar belongs to the object.
      return at;
    }
    if (byte === QUOTE) this.inString = true;
    else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) this.depth += 1;
    else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
      this.depth -= 1;
      if (this.depth === 0) this.valueEnded(chunk, at + 1);
      else if (this.depth < 0) this.place = 'invalid';
    } else if (this.depth === 0 && !isSpace(byte)) this.scalar = true;
    return at + 1;
  }

  /** Skips a string's content from `at` to its closing quote; returns where the scan goes on. */
  private skipString(chunk: Buffer, at: number): number {
    if (this.escaped) {
      this.escaped = false;
      return at + 1;
    }
    // The next quote and backslash of the chunk are found once each, not once per escape or string.
    if (this.nextQuote < at) this.nextQuote = indexOrEnd(chunk, QUOTE, at);
    if (this.nextBackslash < at) this.nextBackslash = indexOrEnd(chunk, BACKSLASH, at);
    if (this.nextBackslash < this.nextQuote) {
      // An escape: the byte after the backslash never ends the string.
      this.escaped = true;
      return this.nextBackslash + 1;
    }
    const quote = this.nextQuote;
    if (quote === chunk.length) return quote;
    this.inString = false;
    if (this.place === 'name') this.nameEnded(chunk, quote + 1);
    else if (this.depth === 0) this.valueEnded(chunk, quote + 1);
    return quote + 1;
  }

  private nameEnded(chunk: Buffer, end: number): void {
    this.place = 'colon';
    const raw = this.name.end(chunk, end);
    const name = raw === undefined ? undefined : parseOrUndefined(raw);
    this.valueName = typeof name === 'string' && this.wanted.has(name) ? name : undefined;
  }

  private valueEnded(chunk: Buffer, end: number): void {
    this.place = 'member';
    const name = this.valueName;
    if (name === undefined) return;
    this.valueName = undefined;
    const raw = this.value.end(chunk, end);
    // A repeated member counts as JSON.parse counts it: the last one.
    this.members.set(name, raw === undefined ? undefined : parseOrUndefined(raw));
  }
}

function indexOrEnd(chunk: Buffer, byte: number, from: number): number {
  const at = chunk.indexOf(byte, from);
  return at === -1 ? chunk.length : at;
}

function isSpace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

function parseOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
