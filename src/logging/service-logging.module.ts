import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import pino from 'pino';
import { activeTraceFields } from '../observability/invocation-telemetry';

/** Where the service's log lines go: stdout by default, written without blocking the event loop. */
export const LOG_DESTINATION = Symbol('LOG_DESTINATION');

/**
 * Log text waiting to be written, at most, in bytes. Past it new lines are dropped whole rather than
 * buffered: when stdout does not keep up (a slow pipe or log collector under load) the backlog
 * otherwise grows without limit; it was the main heap's growth in a soak at 256 connections.
 */
export const MAX_LOG_BACKLOG_BYTES = 8 * 1024 * 1024;

/**
 * A file descriptor (stdout by default) written through sonic-boom in asynchronous mode: a log call
 * appends to a buffer and returns; lines that arrive while a write is in flight go out together in
 * the next one (a pipe or a terminal written synchronously, as Nest's console logger does, cost every
 * request a blocking write). No minimum length, so a quiet service's lines are not held back; at most
 * `maxBacklogBytes` wait, and the first line dropped is reported once on stderr. What is buffered is
 * flushed on exit.
 */
export function nonBlockingDestination(dest: number | string = 1, maxBacklogBytes = MAX_LOG_BACKLOG_BYTES): pino.DestinationStream {
  const destination = pino.destination({ dest, sync: false, maxLength: maxBacklogBytes });
  destination.once('drop', () => {
    process.stderr.write(`log output is not keeping up: lines past ${maxBacklogBytes} bytes of backlog are dropped\n`);
  });
  return destination;
}

/**
 * The standalone service's logging: nestjs-pino's Logger as Nest's logger (main.ts installs it with
 * `app.useLogger`), writing JSON lines to LOG_DESTINATION. Every Nest `Logger` call goes through it,
 * the one line per request too (request-context.ts writes it with the same fields as before).
 *
 * nestjs-pino's per-request middleware (pino-http, and an AsyncLocalStorage scope per request) is
 * not mounted: it added a child logger per request and, on Node 20, promise hooks on every promise
 * of the process, for a request id that the request line already carries.
 *
 * Lines written inside an invocation's span carry its `traceId` and `spanId` (README.md "Traces").
 */
@Module({})
export class ServiceLoggingModule {
  static forRoot(): DynamicModule {
    const destination: Provider = { provide: LOG_DESTINATION, useFactory: () => nonBlockingDestination() };
    return {
      module: ServiceLoggingModule,
      imports: [
        LoggerModule.forRootAsync({
          providers: [destination],
          inject: [LOG_DESTINATION],
          // A line written inside a recording span names its trace (traceId, spanId); otherwise nothing is added.
          useFactory: (stream: pino.DestinationStream) => ({ pinoHttp: [{ mixin: () => activeTraceFields() }, stream], forRoutes: [] }),
        }),
      ],
    };
  }
}
