import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Logger } from 'nestjs-pino';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { AppModule } from './composition/app.module';
import { serveConsole } from './console/serve-console';
import { LEDGER_CONFIG, LedgerConfig } from './config/ledger.config';
import { configureHttp, ledgerHttpAdapter } from './http/configure-http';
import { startTracing, TracingShutdownModule } from './observability/tracing.sdk';

async function bootstrap(): Promise<void> {
  // Before the application exists, so every span it makes is exported (only when OTEL_* ask for it).
  const tracing = await startTracing();
  // AppModule is LedgerModule.forRoot with the HTTP API on and the demo when LEDGER_DEMO=1.
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot({ imports: [TracingShutdownModule.register(tracing)] }), ledgerHttpAdapter(), {
    bufferLogs: true,
    abortOnError: false,
    // configureHttp reads every body itself (bounded, decompressed, checked).
    bodyParser: false,
  });
  // Structured JSON logs, one object per line, written by pino without blocking the event loop.
  const logger = app.get(Logger);
  app.useLogger(logger);
  configureHttp(app);
  // main.js runs from dist/src; `npm run build` writes the console beside it in dist/console.
  serveConsole(app, join(__dirname, '..', 'console'));
  // SIGTERM/SIGINT close the HTTP server, then the store (EventStoreModule.onApplicationShutdown).
  app.enableShutdownHooks();
  const config = app.get<LedgerConfig>(LEDGER_CONFIG);
  await app.listen(config.port, config.host);
  const store = config.store.kind === 'sqlite' ? `sqlite:${config.store.path}` : 'EventStoreDB';
  // The port the server really got: PORT=0 asks the system for a free one (the HTTP benchmark does).
  const port = ((app.getHttpServer() as Server).address() as AddressInfo | null)?.port ?? config.port;
  logger.log(`llm-ledger listening on ${config.host} port ${port} (store: ${store})`, 'Bootstrap');
}

bootstrap().catch((error: unknown) => {
  // A bad configuration is reported as its message alone: no stack trace for a typo in an env var.
  const message = error instanceof Error && error.name === 'ConfigurationError' ? error.message : error;
  console.error(message);
  process.exit(1);
});
