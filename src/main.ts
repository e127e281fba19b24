import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Logger } from 'nestjs-pino';
import cluster from 'node:cluster';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import pino from 'pino';
import { AppModule } from './composition/app.module';
import { storeName } from './event-store/open-event-store';
import { describeStartupFailure, logStartupFailure, preflight, type ServiceConfiguration } from './composition/service-startup';
import { runsWorkers, ServiceWorkers, WorkerStartError } from './composition/service-workers';
import { serviceWorkerSlot } from './config/service-workers.config';
import { serveConsole } from './console/serve-console';
import { configureHttp, ledgerHttpAdapter } from './http-kit/configure-http';
import { startTracing, TracingShutdownModule } from './observability/tracing.sdk';

/**
 * The standalone service, in one path: the configuration, the ports and the read models' lock are
 * checked before anything is written (so a busy port never seeds the demo), then the application is
 * built and listens — or, with LEDGER_WORKERS above 1, this process becomes the primary of that many
 * workers, each of which comes back here and builds its own. Any failure on the way is one log line
 * and an exit status by kind.
 */
async function main(env: NodeJS.ProcessEnv): Promise<void> {
  const service = await preflight(env, { ports: !cluster.isWorker });
  if (!runsWorkers(service)) return bootstrap(env, service);
  const port = await new ServiceWorkers(service).start();
  const { host, store } = service.ledger;
  logStartupLine(`llm-ledger: ${service.workers} workers listening on ${host} port ${port} (store: ${storeName(store)})`);
}

async function bootstrap(env: NodeJS.ProcessEnv, { ledger: config }: ServiceConfiguration): Promise<void> {
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
  const slot = serviceWorkerSlot();
  // SIGTERM/SIGINT close the HTTP server, then the store (LedgerFoundationsModule.onApplicationShutdown).
  if (slot === undefined) app.enableShutdownHooks();
  else closeWorkerOnSignal(app);
  await app.listen(config.port, config.host);
  const store = storeName(config.store);
  // The port the server really got: PORT=0 asks the system for a free one (the HTTP benchmark does).
  const port = ((app.getHttpServer() as Server).address() as AddressInfo | null)?.port ?? config.port;
  logger.log(`llm-ledger listening on ${config.host} port ${port} (store: ${store})${slot === undefined ? '' : `, worker ${slot}`}`, 'Bootstrap');
}

/**
 * A worker closes as the service does (its port, then what it runs, then the store) on SIGTERM or
 * SIGINT, or when its primary is gone; a second signal while it closes (a terminal's SIGINT reaches
 * the primary and every worker, and the primary passes SIGTERM on) changes nothing.
 */
function closeWorkerOnSignal(app: NestFastifyApplication): void {
  let closing: Promise<void> | undefined;
  const close = (): void => {
    closing ??= app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', close);
  process.on('SIGINT', close);
  process.on('disconnect', close);
}

function logStartupLine(message: string): void {
  pino(pino.destination({ dest: 1, sync: true })).info({ context: 'Bootstrap' }, message);
}

main(process.env).catch((error: unknown) => {
  // A worker that stopped before it listened said why in its own line.
  if (error instanceof WorkerStartError) process.exit(error.exitCode);
  const failure = describeStartupFailure(error);
  logStartupFailure(failure);
  process.exit(failure.exitCode);
});
