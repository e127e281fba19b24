import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LedgerMetrics } from '../../src/observability/ledger-metrics';

const DOCKER = join(__dirname, '..', '..', 'docker');
const dashboard = JSON.parse(readFileSync(join(DOCKER, 'grafana', 'dashboards', 'llm-ledger.json'), 'utf8')) as {
  panels: { title: string; targets: { expr: string }[] }[];
};
const exprs = dashboard.panels.flatMap((panel) => panel.targets.map((target) => target.expr));

describe('README.md the Grafana dashboard in docker/ is built on the metrics the service exports', () => {
  it('queries only metrics the registry has (a histogram by its _bucket series)', async () => {
    const registry = new LedgerMetrics({ organizationLabels: false }).registry;
    const exported = new Set((await registry.getMetricsAsJSON()).map((metric) => metric.name));
    const queried = new Set(exprs.flatMap((expr) => expr.match(/\b(ledger|process|nodejs)_[a-z0-9_]+/g) ?? []));
    expect(queried.size).toBeGreaterThan(10);
    for (const name of queried) expect(exported).toContain(name.replace(/_bucket$/, ''));
  });

  it('graphs every README.md ledger metric', () => {
    const all = exprs.join('\n');
    for (const name of [
      'ledger_invocations_total',
      'ledger_refusals_total',
      'ledger_credits_charged_total',
      'ledger_credits_held',
      'ledger_attempts_total',
      'ledger_provider_attempt_duration_seconds_bucket',
      'ledger_accounting_overhead_seconds_bucket',
      'ledger_append_duration_seconds_bucket',
      'ledger_projection_lag_events',
      'ledger_recovered_total',
    ]) {
      expect(all).toContain(name);
    }
  });

  it('has Prometheus scrape the tokenless METRICS_PORT the compose file gives the ledger', () => {
    const prometheus = readFileSync(join(DOCKER, 'prometheus', 'prometheus.yml'), 'utf8');
    const compose = readFileSync(join(DOCKER, 'compose.yml'), 'utf8');
    const port = /METRICS_PORT: "(\d+)"/.exec(compose)?.[1];
    expect(port).toBeDefined();
    expect(prometheus).toContain(`targets: ["ledger:${port}"]`);
  });
});
