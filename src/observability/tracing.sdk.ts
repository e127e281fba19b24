/**
 * The service's trace export (README.md "Traces"): the OpenTelemetry Node SDK with its OTLP exporter, started
 * only when the standard variables ask for it. The library itself uses only `@opentelemetry/api`; an
 * application embedding it brings its own SDK.
 */
import { DynamicModule, Inject, Module, type OnApplicationShutdown } from '@nestjs/common';

/** A started SDK: flushes and stops on shutdown. */
export interface StartedTracing {
  shutdown(): Promise<void>;
}

/**
 * True when the environment asks for traces: `OTEL_TRACES_EXPORTER` names an exporter other than
 * `none`, or, with it unset, an OTLP endpoint is given (`OTEL_EXPORTER_OTLP_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`). `OTEL_SDK_DISABLED=true` wins over both.
 */
export function tracesExportRequested(env: Readonly<Record<string, string | undefined>>): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name.length > 0);
  if (exporters.length > 0) return exporters.some((name) => name !== 'none');
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

/**
 * Starts the Node SDK when `tracesExportRequested(process.env)`; otherwise does nothing and the API
 * stays a no-op. The SDK reads the rest of its configuration (protocol, headers, sampler, resource)
 * from the standard `OTEL_*` variables itself.
 */
export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<StartedTracing | undefined> {
  if (!tracesExportRequested(env)) return undefined;
  // Traces only: metrics leave through GET /metrics and logs through stdout, unless asked otherwise.
  env.OTEL_METRICS_EXPORTER ??= 'none';
  env.OTEL_LOGS_EXPORTER ??= 'none';
  // Loaded only when asked for, so a service without export never loads the SDK.
  const { NodeSDK } = await import('@opentelemetry/sdk-node');
  const sdk = new NodeSDK({ ...(env.OTEL_SERVICE_NAME ? {} : { serviceName: 'llm-ledger' }), instrumentations: [] });
  sdk.start();
  return { shutdown: () => sdk.shutdown() };
}

const STARTED_TRACING = Symbol('STARTED_TRACING');

/** Flushes and stops the started SDK when the application shuts down (after the last span ended). */
@Module({})
export class TracingShutdownModule implements OnApplicationShutdown {
  constructor(@Inject(STARTED_TRACING) private readonly tracing: StartedTracing | undefined) {}

  static register(tracing: StartedTracing | undefined): DynamicModule {
    return { module: TracingShutdownModule, providers: [{ provide: STARTED_TRACING, useValue: tracing }] };
  }

  async onApplicationShutdown(): Promise<void> {
    await this.tracing?.shutdown();
  }
}
