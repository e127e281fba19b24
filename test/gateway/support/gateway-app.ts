/**
 * The gateway's HTTP side served on loopback as the service serves it (Fastify, configureHttp), or
 * mounted on Express as an embedding application would, with an in-memory accounting side under
 * GATEWAY_ACCOUNTING, and the real Anthropic SDK pointed at it.
 */
import Anthropic from '@anthropic-ai/sdk';
import { Global, Module, type INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import type { IncomingMessage, Server } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo, Socket } from 'node:net';
import { LEDGER_CONFIG, loadLedgerConfig } from '../../../src/config/ledger.config';
import { CLOCK } from '../../../src/domain/clock.token';
import { GATEWAY_ACCOUNTING, type GatewayAccounting } from '../../../src/gateway/gateway-call.port';
import { GatewayHttpModule } from '../../../src/gateway/gateway-http.module';
import { configureHttp, ledgerHttpAdapter } from '../../../src/http-kit/configure-http';
import { systemClock, type Clock } from '../../../src/runtime/clock';

/** The service's own Anthropic key: what upstream must see, never the caller's. */
export const SERVICE_API_KEY = 'sk-ant-service-own-key';

export interface GatewayApp {
  readonly app: INestApplication;
  /** `http://127.0.0.1:<port>/anthropic`: an Anthropic SDK's baseURL. */
  readonly baseURL: string;
  readonly port: number;
  client(key: string, options?: { readonly authToken?: boolean }): Anthropic;
  /** Resolves once every connection a client has opened to the gateway so far is closed, on the gateway's side. */
  connectionsClosed(): Promise<void>;
  close(): Promise<void>;
}

export interface GatewayAppOptions {
  readonly accounting: GatewayAccounting;
  /** The upstream Messages API (ANTHROPIC_BASE_URL). */
  readonly upstreamURL: string;
  readonly clock?: Clock;
  /** `fastify` (the service's own setup, the default) or `express` (an embedder's, with Nest's `rawBody: true`). */
  readonly platform?: 'fastify' | 'express';
  /** ANTHROPIC_API_KEY; SERVICE_API_KEY by default, none when null. */
  readonly serviceKey?: string | null;
}

export async function startGateway(options: GatewayAppOptions): Promise<GatewayApp> {
  const serviceKey = options.serviceKey === undefined ? SERVICE_API_KEY : options.serviceKey;
  const config = loadLedgerConfig({}, { anthropicBaseUrl: options.upstreamURL, ...(serviceKey === null ? {} : { anthropicApiKey: serviceKey }) });

  @Global()
  @Module({
    providers: [
      { provide: LEDGER_CONFIG, useValue: config },
      { provide: CLOCK, useValue: options.clock ?? systemClock },
      { provide: GATEWAY_ACCOUNTING, useValue: options.accounting },
    ],
    exports: [LEDGER_CONFIG, CLOCK, GATEWAY_ACCOUNTING],
  })
  class GatewayTestRoot {}

  const moduleRef = await Test.createTestingModule({ imports: [GatewayTestRoot, GatewayHttpModule] }).compile();
  let app: INestApplication;
  if ((options.platform ?? 'fastify') === 'fastify') {
    const fastify = moduleRef.createNestApplication<NestFastifyApplication>(ledgerHttpAdapter(), { logger: false, bodyParser: false });
    configureHttp(fastify);
    app = fastify;
  } else {
    app = moduleRef.createNestApplication<NestExpressApplication>({ logger: false, rawBody: true });
  }
  app.enableShutdownHooks();
  const server = app.getHttpServer() as Server;
  const sockets: Socket[] = [];
  const served = new WeakSet<Socket>();
  server.on('connection', (socket: Socket) => sockets.push(socket));
  server.on('request', (request: IncomingMessage) => served.add(request.socket));
  await app.listen(0, '127.0.0.1');
  const port = (server.address() as AddressInfo).port;
  const baseURL = `http://127.0.0.1:${port}/anthropic`;
  let closing: Promise<void> | undefined;
  return {
    app,
    baseURL,
    port,
    client: (key, clientOptions = {}) =>
      new Anthropic({ ...(clientOptions.authToken === true ? { authToken: key, apiKey: null } : { apiKey: key }), baseURL, maxRetries: 0 }),
    connectionsClosed: async () => {
      await Promise.all(sockets.map((socket) => (socket.destroyed ? undefined : once(socket, 'close'))));
    },
    close: () => {
      // A client may open a connection it never sends on (the SDK's fetch, after an abort); the
      // server would wait for its request until the arrival bound.
      for (const socket of sockets) if (!served.has(socket)) socket.destroy();
      closing ??= app.close();
      return closing;
    },
  };
}
