/**
 * What `LEDGER_DEMO=1` seeds (SPEC §10): the `demo.arithmetic` publication, one funded organization,
 * and a token per role. DEMO ONLY: the tokens are well-known strings printed at start, so an
 * instance with the demo on must never hold real data or face a network it does not trust.
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

/** The Anthropic model the demo routes to when ANTHROPIC_API_KEY is set. */
export const DEMO_ANTHROPIC_MODEL = 'claude-sonnet-4-5';
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
 * The demo publication. Prices are integer credits per million tokens at 1 credit = $0.0001, i.e.
 * $3 / $15 / $3.75 / $0.30 per million input / output / cache-write / cache-read tokens; the
 * hold (5,000 credits, $0.50) bounds one conversation's spend.
 */
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
    prices: { inputPerMTok: 30_000, outputPerMTok: 150_000, cacheWritePerMTok: 37_500, cacheReadPerMTok: 3_000 },
    creditHold: 5_000,
    enabled: true,
  };
}
