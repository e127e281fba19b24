/**
 * The Prometheus metrics of README.md "Metrics", on a registry of their own (so two applications in one
 * process, as in the tests, never share series). Units are in the names; labels are bounded:
 * operations, providers and models come from the catalog, outcomes, reasons and fault classes from
 * closed sets. Organization ids appear only when the operator turned on organization labels.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { RECOVERED_KINDS } from '../invocations/invocation-recovery';
import type { GatewayCallTiming } from '../gateway/gateway-http.channels';
import { joinClusterMetrics, type MetricsExposition } from './cluster-metrics';

/** Bucket bounds of the provider attempt histogram, in seconds (a model call: 50 ms to 2 minutes). */
export const PROVIDER_ATTEMPT_BUCKETS_SECONDS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120] as const;
/** Bucket bounds of the accounting overhead and append histograms, in seconds (0.1 ms to 1 s). */
export const ACCOUNTING_BUCKETS_SECONDS = [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1] as const;

/**
 * Bucket bounds of the gateway overhead histogram, in seconds (50 µs to 1 s): fine below 3 ms, where
 * its goals lie (bench/README.md).
 */
export const GATEWAY_OVERHEAD_BUCKETS_SECONDS = [0.00005, 0.0001, 0.00025, 0.0005, 0.00075, 0.001, 0.0015, 0.002, 0.003, 0.005, 0.01, 0.025, 0.1, 1] as const;

/** `outcome` of an invocation settled without a conversation outcome (an exception or the sweep closed it). */
export const NO_OUTCOME = 'none';
/** `outcome` of a refused invocation (README.md "Metrics"). */
export const REFUSED_OUTCOME = 'refused';

export interface LedgerMetricsOptions {
  readonly organizationLabels: boolean;
}

/** Where the gauges read what is true at scrape time. */
export interface GaugeSources {
  /** Credits held per organization (the balances read model). */
  heldCredits(): Iterable<{ readonly organizationId: string; readonly held: number }>;
  /** Each projection's lag in log positions. */
  projectionLag(): Promise<readonly { readonly projection: string; readonly lag: number }[]>;
}

export interface OrganizationScoped {
  readonly organizationId: string;
}

export class LedgerMetrics implements MetricsExposition {
  readonly registry = new Registry();
  /** What `GET /metrics` answers: this registry, or every worker's when the service runs as several (joinCluster). */
  private read: () => Promise<string> = () => this.registry.metrics();
  private readonly organizationLabels: boolean;
  private readonly invocations: Counter<string>;
  private readonly refusals: Counter<string>;
  private readonly creditsCharged: Counter<string>;
  private readonly attempts: Counter<string>;
  private readonly attemptDuration: Histogram<string>;
  private readonly accountingOverhead: Histogram<string>;
  private readonly appendDuration: Histogram<string>;
  private readonly recovered: Counter<string>;
  private readonly gateway: { readonly calls: Counter<string>; readonly overhead: Histogram<string>; readonly overrunCredits: Counter<string> };
  /** Read from `sources` on each scrape, so they say what is true now. */
  readonly gauges: {
    readonly creditsHeld: Gauge<string>;
    readonly projectionLag: Gauge<string>;
  };

  constructor(options: LedgerMetricsOptions, sources?: GaugeSources) {
    this.organizationLabels = options.organizationLabels;
    const org = options.organizationLabels ? ['organization'] : [];
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    // Registered in this order, which is the order of the scrape.
    ({ invocations: this.invocations, refusals: this.refusals, creditsCharged: this.creditsCharged } = invocationMetrics(registers, org));
    ({
      attempts: this.attempts,
      attemptDuration: this.attemptDuration,
      accountingOverhead: this.accountingOverhead,
      appendDuration: this.appendDuration,
    } = timingMetrics(registers));
    this.recovered = recoveredMetric(registers);
    this.gateway = gatewayMetrics(registers);
    this.gauges = gaugeMetrics(registers, org, sources);
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The exposition `GET /metrics` answers with. */
  exposition(): Promise<string> {
    return this.read();
  }

  /** A worker of several (LEDGER_WORKERS): its series labelled with its slot, and every worker's answered (cluster-metrics.ts). */
  joinCluster(slot: number): void {
    this.read = joinClusterMetrics(this.registry, slot);
  }

  invocationEnded(labels: OrganizationScoped & { readonly operation: string; readonly outcome: string }): void {
    this.invocations.inc(this.scoped({ operation: labels.operation, outcome: labels.outcome }, labels));
  }

  invocationRefused(labels: OrganizationScoped & { readonly operation: string; readonly reason: string }): void {
    this.refusals.inc(this.scoped({ operation: labels.operation, reason: labels.reason }, labels));
    this.invocationEnded({ ...labels, outcome: REFUSED_OUTCOME });
  }

  creditsChargedAdd(labels: OrganizationScoped & { readonly operation: string }, credits: number): void {
    if (credits > 0) this.creditsCharged.inc(this.scoped({ operation: labels.operation }, labels), credits);
  }

  attemptRecorded(labels: { readonly provider: string; readonly model: string; readonly classification: string }, durationMs: number): void {
    this.attempts.inc(labels);
    this.attemptDuration.observe(labels, durationMs / 1_000);
  }

  accountingOverheadObserved(operation: string, overheadMs: number): void {
    this.accountingOverhead.observe({ operation }, Math.max(0, overheadMs) / 1_000);
  }

  recoveredAdd(kind: string, count: number): void {
    if (count > 0) this.recovered.inc({ kind }, count);
  }

  /** One Messages call through the gateway: counted by model and status, its overhead timed when known. */
  gatewayCallObserved({ model, status, overheadSeconds }: GatewayCallTiming): void {
    this.gateway.calls.inc({ model, status });
    if (overheadSeconds !== undefined) this.gateway.overhead.observe(Math.max(0, overheadSeconds));
  }

  /** A gateway call settled at its hold below its attempt's price: the difference, by the model it was held for. */
  gatewayOverrunAdd(model: string, credits: number): void {
    if (credits > 0) this.gateway.overrunCredits.inc({ model }, credits);
  }

  appendObserved(durationMs: number): void {
    this.appendDuration.observe(durationMs / 1_000);
  }

  /** The labels plus `organization` when organization labels are on. */
  scoped<T extends Record<string, string>>(labels: T, { organizationId }: OrganizationScoped): T | (T & { organization: string }) {
    return this.organizationLabels ? { ...labels, organization: organizationId } : labels;
  }

  get withOrganizationLabels(): boolean {
    return this.organizationLabels;
  }
}

/** What an invocation ended as: its outcome, its refusal reason, the credits charged. */
function invocationMetrics(registers: Registry[], org: readonly string[]): { invocations: Counter<string>; refusals: Counter<string>; creditsCharged: Counter<string> } {
  return {
    invocations: new Counter({
      name: 'ledger_invocations_total',
      help: 'Invocations that reached a final state, by operation and outcome (refused ones as outcome="refused").',
      labelNames: ['operation', 'outcome', ...org],
      registers,
    }),
    refusals: new Counter({
      name: 'ledger_refusals_total',
      help: 'Refused invocations by operation and refusal reason.',
      labelNames: ['operation', 'reason', ...org],
      registers,
    }),
    creditsCharged: new Counter({
      name: 'ledger_credits_charged_total',
      help: 'Credits charged at settlement, by operation.',
      labelNames: ['operation', ...org],
      registers,
    }),
  };
}

/** Provider attempts and their durations, the accounting overhead and the appends. */
function timingMetrics(registers: Registry[]): {
  attempts: Counter<string>;
  attemptDuration: Histogram<string>;
  accountingOverhead: Histogram<string>;
  appendDuration: Histogram<string>;
} {
  return {
    attempts: new Counter({
      name: 'ledger_attempts_total',
      help: 'Provider attempts by provider, model and classification (ok or the fault class).',
      labelNames: ['provider', 'model', 'classification'],
      registers,
    }),
    attemptDuration: new Histogram({
      name: 'ledger_provider_attempt_duration_seconds',
      help: 'Duration of each provider attempt as recorded in the log.',
      labelNames: ['provider', 'model', 'classification'],
      buckets: [...PROVIDER_ATTEMPT_BUCKETS_SECONDS],
      registers,
    }),
    accountingOverhead: new Histogram({
      name: 'ledger_accounting_overhead_seconds',
      help: "An invocation's time outside the provider and its tools: admission, appends, settlement.",
      labelNames: ['operation'],
      buckets: [...ACCOUNTING_BUCKETS_SECONDS],
      registers,
    }),
    appendDuration: new Histogram({
      name: 'ledger_append_duration_seconds',
      help: 'Duration of each append to the event store made by a command.',
      buckets: [...ACCOUNTING_BUCKETS_SECONDS],
      registers,
    }),
  };
}

function recoveredMetric(registers: Registry[]): Counter<string> {
  const recovered = new Counter({
    name: 'ledger_recovered_total',
    help: 'Leftovers of a crash this instance finished by its own recovery, by kind: the state an invocation was left in, or hold (a settled invocation whose hold was never released).',
    labelNames: ['kind'],
    registers,
  });
  // Every kind from zero, so a dashboard sees the series before the first crash.
  for (const kind of RECOVERED_KINDS) recovered.inc({ kind }, 0);
  return recovered;
}

/** The gauges, read from `sources` on each scrape; per organization only with organization labels (`org`). */
function gaugeMetrics(registers: Registry[], org: readonly string[], sources: GaugeSources | undefined): { creditsHeld: Gauge<string>; projectionLag: Gauge<string> } {
  const byOrganization = org.length > 0;
  return {
    creditsHeld: new Gauge({
      name: 'ledger_credits_held',
      help: 'Credits held by invocations in flight, from the balances read model.',
      labelNames: [...org],
      registers,
      collect() {
        if (sources === undefined) return;
        this.reset();
        let total = 0;
        for (const { organizationId, held } of sources.heldCredits()) {
          if (byOrganization) this.set({ organization: organizationId }, held);
          else total += held;
        }
        if (!byOrganization) this.set(total);
      },
    }),
    projectionLag: new Gauge({
      name: 'ledger_projection_lag_events',
      help: "Each projection's distance behind the log's head (events with the embedded store).",
      labelNames: ['projection'],
      registers,
      async collect() {
        if (sources === undefined) return;
        this.reset();
        for (const { projection, lag } of await sources.projectionLag()) this.set({ projection }, lag);
      },
    }),
  };
}

/**
 * The gateway's metrics (docs/gateway.md): its calls by model and status, its own share of their time,
 * and the credits its calls cost beyond their holds (their overruns, docs/gateway.md "Settlement").
 */
function gatewayMetrics(registers: Registry[]): { readonly calls: Counter<string>; readonly overhead: Histogram<string>; readonly overrunCredits: Counter<string> } {
  return {
    calls: new Counter({
      name: 'ledger_gateway_calls_total',
      help: 'Messages calls through the gateway, by the admitted call’s model ("none" when it was not admitted) and the HTTP status answered.',
      labelNames: ['model', 'status'],
      registers,
    }),
    overhead: new Histogram({
      name: 'ledger_gateway_overhead_seconds',
      help: "The gateway's own time in a call: from the request's arrival to its first byte upstream, plus from the last byte from upstream to the last byte to the caller.",
      buckets: [...GATEWAY_OVERHEAD_BUCKETS_SECONDS],
      registers,
    }),
    overrunCredits: new Counter({
      name: 'ledger_gateway_overrun_credits_total',
      help: 'Credits gateway calls cost beyond their holds: each was charged its hold and the rest recorded as its overrun, by the model it was held for.',
      labelNames: ['model'],
      registers,
    }),
  };
}
