import type { FactoryProvider } from '@nestjs/common';
import { ConfigurationError } from '../config/ledger.config';
import { WEBHOOK_ADDRESS_POLICIES, type WebhookAddresses } from './webhook-address.policy';

/**
 * What an operator chooses about webhooks, read from the environment at start (README.md "Webhooks").
 * Webhooks own it with their address policy: the ledger's own configuration knows nothing of them.
 */
export interface WebhooksConfig {
  /**
   * `LEDGER_WEBHOOK_ADDRESSES`: `public` (default) delivers webhooks to public addresses only;
   * `any` also to loopback and private ones (a receiver on the operator's own network).
   */
  readonly webhookAddresses: WebhookAddresses;
}

/** A bad webhooks variable: a ConfigurationError like the ledger's own, so the service reports both alike. */
export class WebhooksConfigError extends ConfigurationError {}

/** Parses the webhooks variables; throws naming the bad one. */
export function loadWebhooksConfig(env: Readonly<Record<string, string | undefined>>): WebhooksConfig {
  const raw = env.LEDGER_WEBHOOK_ADDRESSES?.trim();
  const webhookAddresses = (raw || 'public').toLowerCase() as WebhookAddresses;
  if (!WEBHOOK_ADDRESS_POLICIES.includes(webhookAddresses)) {
    throw new WebhooksConfigError([`LEDGER_WEBHOOK_ADDRESSES: expected public or any, got "${env.LEDGER_WEBHOOK_ADDRESSES}"`]);
  }
  return { webhookAddresses };
}

export const WEBHOOKS_CONFIG = Symbol('WEBHOOKS_CONFIG');

/** WEBHOOKS_CONFIG from the environment an options object names (`env`, else process.env). */
export function webhooksConfigProvider(optionsToken: string | symbol): FactoryProvider<WebhooksConfig> {
  return {
    provide: WEBHOOKS_CONFIG,
    inject: [optionsToken],
    useFactory: (options: { readonly env?: Readonly<Record<string, string | undefined>> }) => loadWebhooksConfig(options.env ?? process.env),
  };
}
