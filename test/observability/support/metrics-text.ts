import parsePrometheusTextFormat, { type ParsedFamily } from 'parse-prometheus-text-format';

/** The exposition parsed by a real Prometheus text-format parser, by family name. */
export function parseMetrics(text: string): Map<string, ParsedFamily> {
  return new Map(parsePrometheusTextFormat(text).map((family) => [family.name, family]));
}

/** Each sample of a counter or gauge as `label=value,…` → number (labels in a fixed order). */
export function samples(families: Map<string, ParsedFamily>, name: string, labelNames: readonly string[]): Map<string, number> {
  const family = families.get(name);
  if (family === undefined) throw new Error(`no metric family ${name}`);
  const out = new Map<string, number>();
  for (const sample of family.metrics) {
    const key = labelNames.map((label) => `${label}=${sample.labels?.[label] ?? ''}`).join(',');
    out.set(key, Number(sample.value));
  }
  return out;
}
