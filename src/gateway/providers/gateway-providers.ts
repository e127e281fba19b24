/**
 * The gateway's upstreams, one line each, and the one it forwards to (docs/gateway.md "Providers").
 * Adding one (Amazon Bedrock's or Google Vertex AI's Claude endpoints) is a folder beside
 * `anthropic/` implementing GatewayProvider (gateway-provider.port.ts) and a line here.
 */
import type { LedgerConfig } from '../../config/ledger.config';
import type { GatewayProvider, GatewayProviderFactory } from '../gateway-provider.port';
import { anthropicGatewayProvider } from './anthropic/anthropic-gateway.provider';

export const GATEWAY_PROVIDERS = {
  anthropic: anthropicGatewayProvider,
} as const satisfies Readonly<Record<string, GatewayProviderFactory>>;

/** The upstream the `/anthropic` routes forward to. */
export const GATEWAY_UPSTREAM: keyof typeof GATEWAY_PROVIDERS = 'anthropic';

export function gatewayProviderOf(config: LedgerConfig): GatewayProvider {
  return GATEWAY_PROVIDERS[GATEWAY_UPSTREAM](config);
}
