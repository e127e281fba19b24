import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Where webhooks may be delivered (`LEDGER_WEBHOOK_ADDRESSES`): `public` (the default) only to
 * public unicast addresses, so that an organization's admin cannot make the service POST to its own
 * network (loopback, private ranges, link-local ones such as a cloud metadata service); `any` to
 * every address, for receivers on the operator's own network and for tests on 127.0.0.1.
 */
export type WebhookAddresses = 'public' | 'any';

export const WEBHOOK_ADDRESS_POLICIES: readonly WebhookAddresses[] = ['public', 'any'];

/** The attempt error of a delivery refused because its host is not a public address. */
export const ADDRESS_NOT_PUBLIC = 'address_not_public';

/**
 * True for a public unicast address. Everything ipaddr.js names otherwise is refused: loopback,
 * private, link-local, unique-local, carrier-grade NAT, multicast, broadcast, unspecified, reserved
 * and the translation ranges. An IPv4-mapped IPv6 address is judged as its IPv4 address.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === 'unicast';
}

/** The URL's host as a resolver sees it (an IPv6 literal without its brackets), lower-cased. */
function hostOf(url: URL): string {
  const host = url.hostname.toLowerCase();
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/**
 * Why a webhook URL cannot be registered under `policy`, or undefined. Only what is certain before
 * any lookup is refused here (an address literal, a `localhost` name); a name that resolves to a
 * private address is refused when a delivery connects, because what a name resolves to can change.
 */
export function registrationProblem(url: string, policy: WebhookAddresses): string | undefined {
  if (policy === 'any') return undefined;
  const target = new URL(url);
  const host = hostOf(target);
  if (host === 'localhost' || host.endsWith('.localhost')) return 'must name a public host, not localhost (LEDGER_WEBHOOK_ADDRESSES=any allows it)';
  if (!literalAddressAllowed(target, policy)) return 'must be a public address (LEDGER_WEBHOOK_ADDRESSES=any allows private ones)';
  return undefined;
}

/** A refused connection, with the attempt error it is recorded as. */
function notPublic(hostname: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${hostname} does not resolve to public addresses only`), { code: ADDRESS_NOT_PUBLIC });
}

/**
 * A `lookup` for Node's HTTP client that resolves the name and refuses to connect when any of its
 * addresses is not public. Checking the very addresses the socket will use (rather than resolving
 * once beforehand) leaves no gap for the name to resolve elsewhere in between.
 */
export const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (error, resolved) => {
    if (error) {
      callback(error, '', 0);
      return;
    }
    const addresses = resolved as LookupAddress[];
    if (addresses.length === 0 || addresses.some((entry) => !isPublicAddress(entry.address))) {
      callback(notPublic(hostname), '', 0);
      return;
    }
    if (options.all === true) (callback as unknown as (error: null, addresses: LookupAddress[]) => void)(null, addresses);
    else callback(null, addresses[0]!.address, addresses[0]!.family);
  });
};

/** Whether a delivery to `url` may connect at all: an address literal is judged here, a name by publicOnlyLookup. */
export function literalAddressAllowed(url: URL, policy: WebhookAddresses): boolean {
  if (policy === 'any') return true;
  const host = hostOf(url);
  return isIP(host) === 0 || isPublicAddress(host);
}
