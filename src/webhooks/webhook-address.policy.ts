import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { ResolvedAddress, WebhookResolver } from './webhook-resolver';
import { MAX_ATTEMPT_ERROR_CHARS, WEBHOOK_RESOLVE_TIMEOUT_MS } from './webhook.bounds';

/**
 * Where webhooks may be delivered (`LEDGER_WEBHOOK_ADDRESSES`): `public` (the default) only to
 * public unicast addresses, so that an organization's admin cannot make the service POST to its own
 * network (loopback, private ranges, link-local ones such as a cloud metadata service); `any` to
 * every address, for receivers on the operator's own network and for tests on 127.0.0.1.
 */
export type WebhookAddresses = 'public' | 'any';

export const WEBHOOK_ADDRESS_POLICIES: readonly WebhookAddresses[] = ['public', 'any'];

/** The attempt error of a delivery refused because its host is, or resolves to, an address that is not public. */
export const ADDRESS_NOT_PUBLIC = 'address_not_public';

/** C0 controls (TAB, CR and LF among them) and DEL. URL parsing drops some silently, so the raw text is checked. */
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

export function hasControlCharacter(text: string): boolean {
  return CONTROL_CHARACTER.test(text);
}

/** The IPv4 address held in two 16-bit words of an IPv6 address. */
function ipv4Of(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

/**
 * The IPv4 address an IPv6 address stands for, in each form that embeds one, or undefined. Such an
 * address reaches the IPv4 one (through the host's own stack, a NAT64 gateway or a tunnel relay), so
 * it is judged as that address.
 */
export function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const words = address.parts;
  switch (address.range()) {
    case 'ipv4Mapped': // ::ffff:a.b.c.d
    case 'rfc6145': // ::ffff:0:a.b.c.d (IPv4-translated)
    case 'rfc6052': // NAT64 64:ff9b::/96 and 64:ff9b:1::/48, the IPv4 address in the last 32 bits
      return ipv4Of(words[6]!, words[7]!);
    case '6to4': // 2002:aabb:ccdd::/48, the IPv4 address in bits 16 to 48
      return ipv4Of(words[1]!, words[2]!);
    case 'teredo': // 2001:0:<server>:<flags>:<port>:<client>, the client address with every bit inverted
      return ipv4Of(words[6]! ^ 0xffff, words[7]! ^ 0xffff);
    default:
      // ::a.b.c.d (IPv4-compatible, deprecated but still honoured by some stacks); :: and ::1 land in 0.0.0.0/8.
      return words.slice(0, 6).every((word) => word === 0) ? ipv4Of(words[6]!, words[7]!) : undefined;
  }
}

/**
 * True for a public unicast address. Everything ipaddr.js names otherwise is refused: loopback,
 * private, link-local, unique-local, carrier-grade NAT, multicast, broadcast, unspecified, reserved,
 * documentation and benchmarking ranges. An IPv6 address that embeds an IPv4 one is judged as it.
 */
export function isPublicAddress(address: string): boolean {
  if (isIP(address) === 0) return false;
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv4') return parsed.range() === 'unicast';
  const embedded = embeddedIPv4(parsed as ipaddr.IPv6);
  return (embedded ?? parsed).range() === 'unicast';
}

/**
 * The URL's host as the policy judges it, or undefined when none is left. WHATWG URL has already
 * lower-cased it, mapped it to ASCII (IDNA, so `ＬＯＣＡＬＨＯＳＴ` is `localhost`) and read IPv4 in
 * every notation (`0x7f.1`); here an IPv6 literal loses its brackets and a name every trailing dot
 * (`localhost..` is `localhost`), and what is left is read again, so that a name which is an address
 * once its dots are gone is judged as that address.
 */
export function normalisedHost(url: URL): string | undefined {
  const host = url.hostname.toLowerCase();
  if (host.startsWith('[') && host.endsWith(']')) return host.slice(1, -1);
  const trimmed = host.replace(/\.+$/, '');
  if (trimmed === '') return undefined;
  if (trimmed === host) return host;
  try {
    return normalisedHost(new URL(`http://${trimmed}/`));
  } catch {
    return undefined;
  }
}

/** `localhost` and its subdomains always mean this machine (RFC 6761), whatever a resolver says. */
function isLocalhostName(host: string): boolean {
  return host === 'localhost' || host.endsWith('.localhost');
}

/** A host a delivery may connect to: the addresses that were checked, the only ones it may use. */
export interface CheckedTarget {
  readonly ok: true;
  readonly host: string;
  readonly addresses: readonly ResolvedAddress[];
}

/**
 * A host refused: the attempt error a delivery records, the sentence registration answers with, and
 * whether it is only that the name did not resolve (then nothing was judged).
 */
export interface RefusedTarget {
  readonly ok: false;
  readonly error: string;
  readonly problem: string;
  readonly unresolved: boolean;
}

const NOT_PUBLIC_PROBLEM = 'must be a public address (LEDGER_WEBHOOK_ADDRESSES=any allows private ones)';

function refused(error: string, problem: string, unresolved = false): RefusedTarget {
  return { ok: false, error: error.slice(0, MAX_ATTEMPT_ERROR_CHARS), problem, unresolved };
}

/**
 * Judges a URL's host under `policy`: an address literal as it is, a name by every address `resolver`
 * gives for it now (under `public`, one address that is not public refuses the name). `signal` bounds
 * the lookup. Registration and each delivery both call it; a delivery then connects to one of the
 * checked addresses only, so a name that resolves elsewhere a moment later cannot move it.
 */
export async function checkTarget(url: URL, policy: WebhookAddresses, resolver: WebhookResolver, signal: AbortSignal): Promise<CheckedTarget | RefusedTarget> {
  const host = normalisedHost(url);
  if (host === undefined) return refused('invalid_host', 'must name a host');
  if (policy === 'public' && isLocalhostName(host)) return refused(ADDRESS_NOT_PUBLIC, 'must name a public host, not localhost (LEDGER_WEBHOOK_ADDRESSES=any allows it)');
  const family = isIP(host);
  if (family !== 0) {
    if (policy === 'public' && !isPublicAddress(host)) return refused(ADDRESS_NOT_PUBLIC, NOT_PUBLIC_PROBLEM);
    return { ok: true, host, addresses: [{ address: host, family: family === 6 ? 6 : 4 }] };
  }
  let addresses: readonly ResolvedAddress[];
  try {
    addresses = await raceAbort(resolver.lookup(host), signal);
  } catch (error) {
    const code = signal.aborted ? 'timeout' : String((error as NodeJS.ErrnoException).code ?? 'lookup_failed');
    return refused(code, `must name a host that resolves (${code})`, true);
  }
  if (addresses.length === 0) return refused('ENOTFOUND', 'must name a host that resolves (ENOTFOUND)', true);
  if (policy === 'public' && addresses.some((entry) => !isPublicAddress(entry.address))) {
    return refused(ADDRESS_NOT_PUBLIC, 'must resolve to public addresses only (LEDGER_WEBHOOK_ADDRESSES=any allows private ones)');
  }
  return { ok: true, host, addresses };
}

/** `promise`, or the signal's reason once it aborts first. */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    const settled = (): void => signal.removeEventListener('abort', onAbort);
    promise.then(
      (value) => {
        settled();
        resolve(value);
      },
      (error: unknown) => {
        settled();
        reject(error);
      },
    );
  });
}

/**
 * Why a webhook URL cannot be registered under `policy`, or undefined. Control characters are refused
 * under every policy; under `public` the host is judged as a delivery will judge it, its name
 * resolved now. A name that does not resolve now is registered: nothing can be judged yet, and each
 * delivery resolves and judges it again anyway (what a name resolves to can change), so registering
 * does not hang on the DNS being up.
 */
export async function registrationProblem(url: string, policy: WebhookAddresses, resolver: WebhookResolver): Promise<string | undefined> {
  if (hasControlCharacter(url)) return 'must not contain control characters (such as CR, LF or TAB)';
  if (policy === 'any') return undefined;
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return 'must be an http or https URL';
  }
  const checked = await checkTarget(target, policy, resolver, AbortSignal.timeout(WEBHOOK_RESOLVE_TIMEOUT_MS));
  return checked.ok || checked.unresolved ? undefined : checked.problem;
}
