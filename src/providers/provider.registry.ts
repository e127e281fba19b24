import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Routing } from '../catalog/operation.events';
import { LEDGER_CONFIG, LedgerConfig } from '../config/ledger.config';
import type { OperationFeature } from '../features/operation-feature';
import { ProviderFault, type Provider, type ProviderRequest, type ProviderResponse } from '../runtime';
import { AnthropicProvider } from './anthropic';

/**
 * Picks the provider a publication routes to. There is exactly one answer per routing: a failure is
 * never answered by a substitute model or provider (BR-CAP-PFM-LLM-002-13).
 */
@Injectable()
export class ProviderRegistry {
  private readonly anthropic: Provider;

  constructor(@Inject(LEDGER_CONFIG) config: LedgerConfig) {
    const logger = new Logger('AnthropicProvider');
    this.anthropic =
      config.anthropicApiKey === undefined
        ? new UnconfiguredProvider('anthropic', 'ANTHROPIC_API_KEY is not set, so this operation cannot reach Anthropic')
        : new AnthropicProvider({
            apiKey: config.anthropicApiKey,
            ...(config.anthropicBaseUrl === undefined ? {} : { baseURL: config.anthropicBaseUrl }),
            logger: {
              error: (message: string) => logger.error(message),
              warn: (message: string) => logger.warn(message),
              info: (message: string) => logger.log(message),
              debug: (message: string) => logger.debug(message),
            },
          });
  }

  resolve(routing: Routing, feature: OperationFeature): Provider {
    switch (routing.provider) {
      case 'anthropic':
        return this.anthropic;
      case 'scripted':
        return feature.scriptedModel?.() ??
          new UnconfiguredProvider('scripted', `operation "${feature.operationId}" ships no scripted model`);
    }
  }
}

/** A routing that cannot be served: every attempt fails as `unauthorized`, which is never retried. */
class UnconfiguredProvider implements Provider {
  constructor(
    readonly name: string,
    private readonly reason: string,
  ) {}

  send(_request: ProviderRequest): Promise<ProviderResponse> {
    return Promise.reject(new ProviderFault('unauthorized', this.reason));
  }
}
