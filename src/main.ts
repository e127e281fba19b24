import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Logger } from 'nestjs-pino';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { AppModule } from './composition/app.module';
import { storeName } from './event-store/open-event-store';
import { describeStartupFailure, logStartupFailure, preflight } from './composition/service-startup';
import { serveConsole } from './console/serve-console';
import { configureHttp, ledgerHttpAdapter } from './http-kit/configure-http';
import { startTracing, TracingShutdownModule } from './observability/tracing.sdk';

/**
 * The standalone service, in one path: the configuration, the ports and the read models' lock are
 * checked before anything is written (so a busy port never seeds the demo), then the application is
 * built and listens. Any failure on the way is one log line and an exit status by kind.
 */
async function bootstrap(env: NodeJS.ProcessEnv): Promise<void> {
  const { ledger: config } = await preflight(env);
  // Before the application exists, so every span it makes is exported (only when OTEL_* ask for it).
  const tracing = await startTracing();
  // AppModule is LedgerModule.forRoot with the HTTP API on and the demo when LEDGER_DEMO=1.
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.forRoot({ env, imports: [TracingShutdownModule.register(tracing)] }),
    ledgerHttpAdapter(),
    {
      // Nest's own lines wait for the JSON logger; a start that fails drops them with its stack
      // trace, and says what failed in one line instead.
      bufferLogs: true,
      autoFlushLogs: false,
      abortOnError: false,
      // configureHttp reads every body itself (bounded, decompressed, checked).
      bodyParser: false,
    },
  );
  // Structured JSON logs, one object per line, written by pino without blocking the event loop.
  const logger = app.get(Logger);
  app.useLogger(logger);
  app.flushLogs();
  configureHttp(app);
  // main.js runs from dist/src; `npm run build` writes the console beside it in dist/console.
  serveConsole(app, join(__dirname, '..', 'console'));
  // SIGTERM/SIGINT close the HTTP server, then the store (LedgerFoundationsModule.onApplicationShutdown).
  app.enableShutdownHooks();
  await app.listen(config.port, config.host);
  const store = storeName(config.store);
  // The port the server really got: PORT=0 asks the system for a free one (the HTTP benchmark does).
  const port = ((app.getHttpServer() as Server).address() as AddressInfo | null)?.port ?? config.port;
  logger.log(`llm-ledger listening on ${config.host} port ${port} (store: ${store})`, 'Bootstrap');
}

bootstrap(process.env).catch((error: unknown) => {
  const failure = describeStartupFailure(error);
  logStartupFailure(failure);
  process.exit(failure.exitCode);
});
