import { ADMISSION_REFUSAL_REASONS, GATEWAY_STATUS_OF_REFUSAL, spendLimitLeft } from '../../src/accounts/admission.policy';
import { embeddedLogFile, embeddedLogPath, parseStoreUrl } from '../../src/event-store/open-event-store';
import { anthropicErrorTypeOf, STATUS_OF_ANTHROPIC_ERROR_TYPE } from '../../src/gateway/anthropic-error.body';
import type { AnthropicErrorType } from '../../src/gateway/gateway-call.port';

/** Issue 34: each of these facts is written in one place; these are the places, read both ways. */
describe('issue 34: one place for each gateway fact', () => {
  it('an HTTP status and its Anthropic error type are one table, read either way', () => {
    for (const [type, status] of Object.entries(STATUS_OF_ANTHROPIC_ERROR_TYPE)) expect(anthropicErrorTypeOf(status)).toBe(type as AnthropicErrorType);
    expect(anthropicErrorTypeOf(415)).toBe('invalid_request_error');
    expect(anthropicErrorTypeOf(503)).toBe('api_error');
  });

  it('every admission refusal has its status, and that status has the error type Anthropic’s SDKs map it to', () => {
    expect(Object.keys(GATEWAY_STATUS_OF_REFUSAL).sort()).toEqual([...ADMISSION_REFUSAL_REASONS].sort());
    expect(anthropicErrorTypeOf(GATEWAY_STATUS_OF_REFUSAL.key_spend_limit)).toBe('billing_error');
    expect(anthropicErrorTypeOf(GATEWAY_STATUS_OF_REFUSAL.no_running_slot)).toBe('rate_limit_error');
    expect(anthropicErrorTypeOf(GATEWAY_STATUS_OF_REFUSAL.key_model_not_allowed)).toBe('permission_error');
  });

  it('a key’s or a team’s limit leaves limit − spent − held, negative when over it (a refusal shows 0)', () => {
    expect(spendLimitLeft({ limitCredits: 1_000, spentCredits: 600, heldCredits: 300 })).toBe(100);
    expect(spendLimitLeft({ limitCredits: 1_000, spentCredits: 900, heldCredits: 300 })).toBe(-200);
  });

  it('what only the embedded log can do is asked of embeddedLogPath / embeddedLogFile, never of a store kind', () => {
    expect(embeddedLogPath(parseStoreUrl('sqlite:./var/ledger.sqlite'))).toBe('./var/ledger.sqlite');
    expect(embeddedLogFile(parseStoreUrl('sqlite::memory:'))).toBeUndefined();
    expect(embeddedLogPath(parseStoreUrl('sqlite::memory:'))).toBe(':memory:');
    expect(embeddedLogPath(parseStoreUrl('postgres://db.example/ledger'))).toBeUndefined();
  });
});
