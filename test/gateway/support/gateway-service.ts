/**
 * The real service (startHttpLedger: Fastify, configureHttp, the SQLite store, the /anthropic routes
 * mounted beside the API) against a local Messages API, with docs/gateway.md's first two commands run:
 * a model on the rate card and a key issued, on an organization with credits. Anthropic's SDK is
 * pointed at it with that key.
 */
import Anthropic from '@anthropic-ai/sdk';
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MessagesApiServer } from '../../support/messages-api-server';
import { bearer, startHttpLedger, TOKENS, type HttpLedger, type HttpLedgerOptions } from '../../http/support/http-ledger';

export const GATEWAY_MODEL = 'claude-sonnet-5-5';
/** Integer credits per million tokens: 3 per input token, 15 per output token. */
export const GATEWAY_PRICES = { inputPerMTok: 3_000_000, outputPerMTok: 15_000_000, cacheWritePerMTok: 3_750_000, cacheWrite1hPerMTok: 6_000_000, cacheReadPerMTok: 300_000 };
export const GATEWAY_KEY_NAME = 'ci-bot';
/** What the organization is granted: many worst-case holds of a small call. */
export const GRANTED_CREDITS = 100_000_000;

export interface GatewayService {
  readonly ledger: HttpLedger;
  readonly upstream: MessagesApiServer;
  /** The key issued for `acme`, as the caller presents it. */
  readonly key: string;
  readonly keyId: string;
  client(): Anthropic;
  close(): Promise<void>;
}

export interface GatewayServiceOptions extends HttpLedgerOptions {
  /** The model's rate card prices; GATEWAY_PRICES by default. */
  readonly prices?: Readonly<Record<string, number>>;
  /** What `acme` is granted; GRANTED_CREDITS by default. */
  readonly credits?: number;
}

export async function startGatewayService(options: GatewayServiceOptions = {}): Promise<GatewayService> {
  const upstream = await MessagesApiServer.start();
  const ledger = await startHttpLedger({ ...options, env: { ANTHROPIC_BASE_URL: upstream.baseURL, ANTHROPIC_API_KEY: 'sk-ant-the-service-own', ...options.env } });
  const server = ledger.app.getHttpServer() as Server;
  if (!server.listening) {
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
  }
  const baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/anthropic`;
  const system = bearer(TOKENS.system);
  await ledger.http().post('/v1/organizations/acme/grants').set(system).send({ credits: options.credits ?? GRANTED_CREDITS, reason: 'start', idempotencyKey: 'g-1' }).expect(200);
  await ledger.http().put(`/v1/gateway/models/${GATEWAY_MODEL}`).set(system).send({ prices: options.prices ?? GATEWAY_PRICES, maxOutputTokens: 64_000, attemptTimeoutMs: 60_000, enabled: true }).expect(200);
  const issued = await ledger.http().post('/v1/organizations/acme/gateway-keys').set(system).send({ name: GATEWAY_KEY_NAME }).expect(200);
  const { key, keyId } = issued.body as { key: string; keyId: string };
  return {
    ledger,
    upstream,
    key,
    keyId,
    client: () => new Anthropic({ baseURL, apiKey: key, maxRetries: 0 }),
    close: async () => {
      await ledger.close();
      await upstream.close();
    },
  };
}

/** How often settledView asks again, in ms: a poll for a condition, never a wait for correctness. */
const SETTLED_POLL_MS = 10;

/**
 * The invocation's view once it shows the call settled: the settlement is in the log before the
 * answer's last bytes reach the caller, but the read side follows the log after commit.
 */
export async function settledView(ledger: HttpLedger, invocationId: string): Promise<Record<string, unknown>> {
  for (;;) {
    const view = await ledger.http().get(`/v1/invocations/${invocationId}`).set(bearer(TOKENS.system));
    if (view.status === 200 && view.body.state === 'settled') return view.body as Record<string, unknown>;
    await new Promise((resolve) => setTimeout(resolve, SETTLED_POLL_MS));
  }
}
