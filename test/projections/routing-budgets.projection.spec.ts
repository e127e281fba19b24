import { ROUTING_BUDGETS_COLLECTION, routingBudgetsProjection, type RoutingBudgetsView } from '../../projections';
import { at, EventLog, published, publicationV } from './support/invocation-log';
import { project } from './support/in-memory-read-model';

describe('ATS-PFM-LLM-002-12 historical routing budgets keep every publication with its window (README.md "Prices", docs/http.md)', () => {
  const v1 = publicationV(1, { publishedAt: at(0), limits: { ...publicationV(1).limits, maxTurns: 2 } });
  const v2 = publicationV(2, { publishedAt: at(60_000), routing: { provider: 'anthropic', model: 'claude-x' }, creditHold: 800 });
  const v3 = publicationV(3, { publishedAt: at(120_000), enabled: false });

  it('closes each version at the next one and leaves the one in force open', () => {
    const log = new EventLog()
      .append('operation-demo.arithmetic', published('demo.arithmetic', v1), published('demo.arithmetic', v2))
      .append('operation-other', published('other', publicationV(1, { publishedAt: at(5) })))
      .append('operation-demo.arithmetic', published('demo.arithmetic', v3));
    const tx = project(routingBudgetsProjection, log.events);
    const view = tx.get<RoutingBudgetsView>(ROUTING_BUDGETS_COLLECTION, 'demo.arithmetic');
    expect(view).toEqual({
      operationId: 'demo.arithmetic',
      versions: [
        { version: 1, routing: v1.routing, limits: v1.limits, prices: v1.prices, creditHold: 500, enabled: true, from: at(0), until: at(60_000) },
        { version: 2, routing: v2.routing, limits: v2.limits, prices: v2.prices, creditHold: 800, enabled: true, from: at(60_000), until: at(120_000) },
        { version: 3, routing: v3.routing, limits: v3.limits, prices: v3.prices, creditHold: 500, enabled: false, from: at(120_000) },
      ],
    });
    expect(tx.get<RoutingBudgetsView>(ROUTING_BUDGETS_COLLECTION, 'other')?.versions).toHaveLength(1);
  });

  it('ignores a version it already holds, so a replayed publication changes nothing', () => {
    const log = new EventLog().append('operation-demo.arithmetic', published('demo.arithmetic', v1), published('demo.arithmetic', v2), published('demo.arithmetic', v1));
    const view = project(routingBudgetsProjection, log.events).get<RoutingBudgetsView>(ROUTING_BUDGETS_COLLECTION, 'demo.arithmetic');
    expect(view?.versions.map((version) => [version.version, version.until])).toEqual([
      [1, at(60_000)],
      [2, undefined],
    ]);
  });

  it('shows each version’s whole rate version: 1-hour writes, web searches and long-context rates beside the old kinds (README.md "Prices")', () => {
    const longContext = { thresholdInputTokens: 200_000, inputPerMTok: 6_000, outputPerMTok: 22_500, cacheWritePerMTok: 7_500, cacheWrite1hPerMTok: 12_000, cacheReadPerMTok: 600 };
    const richer = publicationV(2, { publishedAt: at(60_000), prices: { ...v1.prices, cacheWrite1hPerMTok: 6_000, webSearchPerThousand: 10_000, longContext } });
    const old = { ...v1, prices: { inputPerMTok: 3_000, outputPerMTok: 15_000, cacheWritePerMTok: 3_750, cacheReadPerMTok: 300 } };
    const log = new EventLog().append('operation-demo.arithmetic', published('demo.arithmetic', old), published('demo.arithmetic', richer));
    const view = project(routingBudgetsProjection, log.events).get<RoutingBudgetsView>(ROUTING_BUDGETS_COLLECTION, 'demo.arithmetic');
    expect(view?.versions.map((version) => version.prices)).toEqual([
      { inputPerMTok: 3_000, outputPerMTok: 15_000, cacheWritePerMTok: 3_750, cacheWrite1hPerMTok: 3_750, cacheReadPerMTok: 300, webSearchPerThousand: 0 },
      { inputPerMTok: 3_000, outputPerMTok: 15_000, cacheWritePerMTok: 3_750, cacheWrite1hPerMTok: 6_000, cacheReadPerMTok: 300, webSearchPerThousand: 10_000, longContext },
    ]);
  });
});
