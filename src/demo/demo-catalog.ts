/**
 * What `LEDGER_DEMO=1` seeds (README.md "The demo"): the `demo.arithmetic` publication, one funded
 * organization, and a token per role. DEMO ONLY: the tokens are well-known strings printed at start, so
 * an instance with the demo on must never hold real data or face a network it does not trust.
 */
import type { TokenGrant } from '../config/ledger.config';
import type { PublicationRequest } from '../catalog/publish-operation.command';
import { DEMO_OPERATION_ID } from '../features/demo-arithmetic/demo-arithmetic.feature';

export { DEMO_OPERATION_ID };

export const DEMO_ORGANIZATION_ID = 'demo-org';
/** Credits granted once to the demo organization (1 credit = $0.0001 at the prices below: $100). */
export const DEMO_GRANT_CREDITS = 1_000_000;
/** The grant's idempotency key: every later start finds it used and grants nothing. */
export const DEMO_GRANT_IDEMPOTENCY_KEY = 'demo-seed-grant-1';
export const DEMO_GRANT_REASON = 'LEDGER_DEMO seed';

/**
 * The Anthropic model the demo routes to when ANTHROPIC_API_KEY is set: the current Sonnet (Sonnet 4.5,
 * the first demo's model, reached its end of life on 2026-11-30).
 */
export const DEMO_ANTHROPIC_MODEL = 'claude-sonnet-5-5';
/** The built-in offline model otherwise. */
export const DEMO_SCRIPTED_MODEL = 'demo-arithmetic-model';

/** Fixed, so the printed curl lines keep working across restarts. */
export const DEMO_TOKENS: ReadonlyArray<{ readonly token: string; readonly grant: TokenGrant }> = [
  { token: 'demo-system-token', grant: { role: 'system' } },
  { token: 'demo-auditor-token', grant: { role: 'auditor' } },
  { token: 'demo-admin-token', grant: { role: 'org_admin', organizationId: DEMO_ORGANIZATION_ID } },
  { token: 'demo-member-token', grant: { role: 'org_member', organizationId: DEMO_ORGANIZATION_ID } },
];

/**
 * The rate version of each routing, in integer credits per million tokens at 1 credit = $0.0001.
 * Anthropic's: Sonnet 5.5's list prices, $2 / $10 per million input / output tokens, $2.50 and $4 for
 * 5-minute and 1-hour cache writes, $0.20 for cache reads. The scripted model's are the first demo's
 * ($3 / $15 / $3.75 / $0.30), which the walk-through's figures are worked at.
 */
const DEMO_PRICES = {
  anthropic: { inputPerMTok: 20_000, outputPerMTok: 100_000, cacheWritePerMTok: 25_000, cacheWrite1hPerMTok: 40_000, cacheReadPerMTok: 2_000 },
  scripted: { inputPerMTok: 30_000, outputPerMTok: 150_000, cacheWritePerMTok: 37_500, cacheReadPerMTok: 3_000 },
} as const;

/** The demo publication; the hold (5,000 credits, $0.50) bounds one conversation's spend. */
export function demoPublication(routing: 'anthropic' | 'scripted'): PublicationRequest {
  return {
    routing: routing === 'anthropic' ? { provider: 'anthropic', model: DEMO_ANTHROPIC_MODEL } : { provider: 'scripted', model: DEMO_SCRIPTED_MODEL },
    limits: {
      maxTurns: 6,
      maxToolCalls: 6,
      totalTimeMs: 60_000,
      attemptTimeoutMs: 30_000,
      maxOutputTokens: 1_024,
      maxAttemptsPerTurn: 3,
    },
    prices: DEMO_PRICES[routing],
    creditHold: 5_000,
    enabled: true,
  };
}
