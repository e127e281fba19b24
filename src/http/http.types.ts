/**
 * The parts of Express's request and response this layer uses. The project carries no @types/express,
 * so they are declared here, on top of node:http's own types.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface HttpRequest extends IncomingMessage {
  readonly method: string;
  readonly url: string;
  readonly originalUrl?: string;
  /** A request header (case-insensitive name), or undefined. */
  header(name: string): string | undefined;
  /** The matching content type, false when the body is of another type, null when there is no body. */
  is(type: string): string | false | null;
}

export interface HttpResponse extends ServerResponse {
  status(code: number): this;
  json(body: unknown): this;
}

export type NextFunction = (error?: unknown) => void;
