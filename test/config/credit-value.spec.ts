/**
 * LEDGER_CREDIT_VALUE (issue 33; docs/http.md "Money beside credits"): parsed exactly (a decimal string
 * and a currency code, no floating point), credits turned into money as exact decimal strings, and a
 * bad value refusing the start in one line that names the variable.
 */
import { describeStartupFailure } from '../../src/composition/service-startup';
import { MAX_CREDIT_VALUE_FRACTION_DIGITS, moneyMember, moneyOf, parseCreditValue, type CreditValue } from '../../src/config/credit-value';
import { ConfigurationError, loadLedgerConfig } from '../../src/config/ledger.config';

const value = (text: string): CreditValue => {
  const parsed = parseCreditValue(text);
  if (parsed === undefined || 'problem' in parsed) throw new Error(`not a credit value: ${text}`);
  return parsed;
};

describe('LEDGER_CREDIT_VALUE: money beside credits, exact (issue 33)', () => {
  it('reads a decimal amount and a currency code exactly, trailing zeros dropped; absent or blank is no value', () => {
    expect(value('0.0001 USD')).toEqual({ currency: 'USD', amount: '0.0001', scaled: 1n, scale: 4 });
    expect(value('0.000010 EUR')).toEqual({ currency: 'EUR', amount: '0.00001', scaled: 1n, scale: 5 });
    expect(value('2 JPY')).toEqual({ currency: 'JPY', amount: '2', scaled: 2n, scale: 0 });
    expect(parseCreditValue(undefined)).toBeUndefined();
    expect(parseCreditValue('  ')).toBeUndefined();
  });

  it('turns credits into money without floating point: 0.1 + 0.2 style sums stay exact, and figures past 2^53 in money stay exact', () => {
    // 0.0001 × 3 in floating point is 0.00030000000000000003.
    expect(moneyOf(3, value('0.0001 USD'))).toBe('0.0003');
    expect(moneyOf(4_542, value('0.0001 USD'))).toBe('0.4542');
    expect(moneyOf(1_000_000, value('0.0001 USD'))).toBe('100');
    expect(moneyOf(-25, value('0.0001 USD'))).toBe('-0.0025');
    expect(moneyOf(0, value('0.0001 USD'))).toBe('0');
    expect(moneyOf(Number.MAX_SAFE_INTEGER, value('999999999999.999999999999999999 USD'))).toBe('9007199254740990999999999999.990992800745259009');
    expect(moneyOf(7, value(`0.${'0'.repeat(MAX_CREDIT_VALUE_FRACTION_DIGITS - 1)}3 XTS`))).toBe(`0.${'0'.repeat(MAX_CREDIT_VALUE_FRACTION_DIGITS - 2)}21`);
    expect(() => moneyOf(0.5, value('1 USD'))).toThrow(RangeError);
  });

  it('gives answers a money member naming each figure, and nothing without a value', () => {
    expect(moneyMember(value('0.0001 USD'), { spentCredits: 12_345, heldCredits: 0 })).toEqual({ money: { currency: 'USD', spentCredits: '1.2345', heldCredits: '0' } });
    expect(moneyMember(undefined, { spentCredits: 12_345 })).toEqual({});
  });

  it.each(['0.0001', 'USD 0.0001', '0.0001 usd', '0 USD', '0.000 USD', '-1 USD', '1e-4 USD', '.5 USD', '0.0001  USD', `0.${'0'.repeat(MAX_CREDIT_VALUE_FRACTION_DIGITS)}1 USD`, '1000000000000 USD'])(
    'refuses %j: the service does not start, and says so in one line naming LEDGER_CREDIT_VALUE',
    (text) => {
      let caught: unknown;
      try {
        loadLedgerConfig({ LEDGER_CREDIT_VALUE: text });
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(ConfigurationError);
      const { message: line } = describeStartupFailure(caught);
      expect(line.split('\n')).toHaveLength(1);
      expect(line).toContain('LEDGER_CREDIT_VALUE: expected a positive decimal amount');
    },
  );

  it('is on the configuration when well formed, and absent when not set', () => {
    expect(loadLedgerConfig({ LEDGER_CREDIT_VALUE: '0.0001 USD' }).creditValue).toMatchObject({ currency: 'USD', amount: '0.0001' });
    expect(loadLedgerConfig({}).creditValue).toBeUndefined();
  });
});
