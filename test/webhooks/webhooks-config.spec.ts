import { ConfigurationError, loadLedgerConfig } from '../../src/config/ledger.config';
import { preflight } from '../../src/composition/service-startup';
import { loadWebhooksConfig } from '../../src/webhooks/webhooks.config';

/**
 * Webhooks own their configuration beside their address policy: the ledger's configuration no longer
 * reads LEDGER_WEBHOOK_ADDRESSES, and a bad value is still refused at start, named in the same one
 * error as the ledger's own bad variables.
 */
describe('LEDGER_WEBHOOK_ADDRESSES is read by the webhooks room, refused at start when it is neither public nor any', () => {
  it('defaults to public and reads any, in any case and with spaces around', () => {
    expect(loadWebhooksConfig({}).webhookAddresses).toBe('public');
    expect(loadWebhooksConfig({ LEDGER_WEBHOOK_ADDRESSES: '  ' }).webhookAddresses).toBe('public');
    expect(loadWebhooksConfig({ LEDGER_WEBHOOK_ADDRESSES: ' ANY ' }).webhookAddresses).toBe('any');
  });

  it('refuses another value as a ConfigurationError naming the variable', () => {
    expect(() => loadWebhooksConfig({ LEDGER_WEBHOOK_ADDRESSES: 'private' })).toThrow(ConfigurationError);
    expect(() => loadWebhooksConfig({ LEDGER_WEBHOOK_ADDRESSES: 'private' })).toThrow('LEDGER_WEBHOOK_ADDRESSES: expected public or any, got "private"');
  });

  it('is not the ledger configuration’s business: loadLedgerConfig accepts any value of it', () => {
    expect(() => loadLedgerConfig({ LEDGER_WEBHOOK_ADDRESSES: 'private' })).not.toThrow();
  });

  it('is named by the service’s start together with the ledger’s own bad variables, in one error', async () => {
    const env = { LEDGER_SQLITE_SYNCHRONOUS: 'sometimes', LEDGER_WEBHOOK_ADDRESSES: 'private', METRICS_PORT: 'x' };
    await expect(preflight(env)).rejects.toMatchObject({
      problems: [
        'LEDGER_SQLITE_SYNCHRONOUS: expected NORMAL or FULL, got "sometimes"',
        'LEDGER_WEBHOOK_ADDRESSES: expected public or any, got "private"',
        'METRICS_PORT: expected an integer from 0 to 65535, got "x"',
      ],
    });
  });
});
