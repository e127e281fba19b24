import { isIP } from 'node:net';
import type { ResolvedAddress, WebhookResolver } from '../../../src/webhooks/webhook-resolver';

/**
 * A resolver from a table of names to addresses, so no test asks DNS. A name it does not know fails
 * as getaddrinfo does (ENOTFOUND); `answer` changes a name's addresses (a rebinding name), and `asked`
 * lists every name it was asked for, in order.
 */
export class FakeResolver implements WebhookResolver {
  readonly asked: string[] = [];
  private readonly table: Map<string, readonly string[]>;

  constructor(table: Readonly<Record<string, readonly string[]>> = {}) {
    this.table = new Map(Object.entries(table));
  }

  answer(hostname: string, addresses: readonly string[]): void {
    this.table.set(hostname, addresses);
  }

  async lookup(hostname: string): Promise<readonly ResolvedAddress[]> {
    this.asked.push(hostname);
    const addresses = this.table.get(hostname);
    if (addresses === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: isIP(address) === 6 ? 6 : 4 }));
  }
}
