import { promises as dns } from 'node:dns';

/** One address a webhook's host name resolves to. */
export interface ResolvedAddress {
  readonly address: string;
  readonly family: 4 | 6;
}

/**
 * Resolves a webhook's host name to every address it has (README.md "Webhooks"): at registration and
 * at each delivery, so that each address is judged by the address policy and the delivery connects
 * only to one of them. A port so that tests map names to addresses without any DNS.
 */
export interface WebhookResolver {
  lookup(hostname: string): Promise<readonly ResolvedAddress[]>;
}

export const WEBHOOK_RESOLVER = Symbol('WEBHOOK_RESOLVER');

/** The system's resolver (getaddrinfo: /etc/hosts, then DNS), every address in the order it gives. */
export const systemWebhookResolver: WebhookResolver = {
  async lookup(hostname) {
    const addresses = await dns.lookup(hostname, { all: true, verbatim: true });
    return addresses.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));
  },
};
