import type { FactoryProvider } from '@nestjs/common';
import { ConfigurationError } from '../config/ledger.config';

/**
 * What an operator chooses about metrics, read from the environment at start (README.md "Metrics").
 * Kept apart from the ledger's own configuration: none of it changes what the ledger records.
 */

export interface ObservabilityConfig {
  /**
   * `METRICS_PORT`: serve `GET /metrics` without a token on this port (a scrape network the operator
   * controls). Unset: only the API's own port serves it, to the `system` role.
   */
  readonly metricsPort?: number;
  /** Interface of the metrics port: `HOST` like the API (default 127.0.0.1). */
  readonly metricsHost: string;
  /**
   * `LEDGER_METRICS_ORGANIZATION_LABELS=1`: add an `organization` label to the per-organization
   * metrics. Off by default, because every organization then multiplies those series.
   */
  readonly organizationLabels: boolean;
}

const MAX_PORT = 65_535;
export const DEFAULT_METRICS_HOST = '127.0.0.1';

/** A bad metrics variable: a ConfigurationError like the ledger's own, so the service reports both alike. */
export class ObservabilityConfigError extends ConfigurationError {}

/** Parses the metrics variables; throws naming the bad one. */
export function loadObservabilityConfig(env: Readonly<Record<string, string | undefined>>): ObservabilityConfig {
  const problems: string[] = [];
  const rawPort = env.METRICS_PORT?.trim();
  let metricsPort: number | undefined;
  if (rawPort) {
    metricsPort = Number(rawPort);
    if (!/^\d+$/.test(rawPort) || metricsPort > MAX_PORT) {
      problems.push(`METRICS_PORT: expected an integer from 0 to ${MAX_PORT}, got "${rawPort}"`);
    }
  }
  const rawLabels = env.LEDGER_METRICS_ORGANIZATION_LABELS?.trim();
  if (rawLabels && !['0', '1', 'true', 'false'].includes(rawLabels)) {
    problems.push(`LEDGER_METRICS_ORGANIZATION_LABELS: expected 1 or 0, got "${rawLabels}"`);
  }
  if (problems.length > 0) throw new ObservabilityConfigError(problems);
  return {
    ...(metricsPort === undefined ? {} : { metricsPort }),
    metricsHost: env.HOST?.trim() || DEFAULT_METRICS_HOST,
    organizationLabels: rawLabels === '1' || rawLabels === 'true',
  };
}

export const OBSERVABILITY_CONFIG = Symbol('OBSERVABILITY_CONFIG');

/** OBSERVABILITY_CONFIG from the environment an options object names (`env`, else process.env). */
export function observabilityConfigProvider(optionsToken: string | symbol): FactoryProvider<ObservabilityConfig> {
  return {
    provide: OBSERVABILITY_CONFIG,
    inject: [optionsToken],
    useFactory: (options: { readonly env?: Readonly<Record<string, string | undefined>> }) => loadObservabilityConfig(options.env ?? process.env),
  };
}
