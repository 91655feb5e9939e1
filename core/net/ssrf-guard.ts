import { lookup } from "node:dns/promises";
import type { LookupAddress } from "node:dns";
import { isIP } from "node:net";
import ipaddr from "ipaddr.js";

/**
 * IANA's IPv4 special-purpose blocks that are not globally reachable. ipaddr.js 2.5 already puts
 * each in a range other than "unicast"; they are listed here too because package.json allows any
 * 2.x, and a later version that regroups its tables must not let one of these through.
 */
const NON_GLOBAL_IPV4 = [
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.0.0.0/24",
  "192.0.2.0/24",
  "192.88.99.0/24",
  "192.168.0.0/16",
  "198.18.0.0/15",
  "198.51.100.0/24",
  "203.0.113.0/24",
  "224.0.0.0/4",
  "240.0.0.0/4",
].map((cidr) => ipaddr.IPv4.parseCIDR(cidr));

/** Only this block is allocated for global unicast; anything outside it cannot be a public host. */
const GLOBAL_UNICAST_IPV6 = ipaddr.IPv6.parseCIDR("2000::/3");

/** The IPv4 address made of the given bytes, each XORed with `mask` (Teredo inverts its client). */
function ipv4At(bytes: number[], at: number[], mask = 0): ipaddr.IPv4 {
  return new ipaddr.IPv4(at.map((i) => bytes[i]! ^ mask));
}

const LAST_32_BITS = [12, 13, 14, 15];

/**
 * Where RFC 6052 puts the IPv4 address for each prefix length from /48 up (bits 64-71 are skipped).
 * The local-use NAT64 prefix lets each network choose its length, so every position is a candidate.
 */
const RFC6052_POSITIONS_FROM_48 = [[6, 7, 9, 10], [7, 9, 10, 11], [9, 10, 11, 12], LAST_32_BITS];

/**
 * IPv6 ranges whose addresses carry an IPv4 address that a host, translator or relay will end up
 * talking to; such an address is only as public as what it carries. The ranges do not overlap.
 */
const IPV4_CARRIERS: { range: [ipaddr.IPv6, number]; carried: (bytes: number[]) => ipaddr.IPv4[] }[] = [
  // IPv4-compatible (RFC 4291, deprecated); :: and ::1 carry 0.0.0.0/8 and so are refused with it.
  { range: ipaddr.IPv6.parseCIDR("::/96"), carried: (b) => [ipv4At(b, LAST_32_BITS)] },
  // IPv4-mapped (RFC 4291): a dual-stack socket sends these over IPv4.
  { range: ipaddr.IPv6.parseCIDR("::ffff:0:0/96"), carried: (b) => [ipv4At(b, LAST_32_BITS)] },
  // IPv4-translated (RFC 6145).
  { range: ipaddr.IPv6.parseCIDR("::ffff:0:0:0/96"), carried: (b) => [ipv4At(b, LAST_32_BITS)] },
  // NAT64 well-known prefix (RFC 6052), always a /96.
  { range: ipaddr.IPv6.parseCIDR("64:ff9b::/96"), carried: (b) => [ipv4At(b, LAST_32_BITS)] },
  // NAT64 local-use prefix (RFC 8215).
  { range: ipaddr.IPv6.parseCIDR("64:ff9b:1::/48"), carried: (b) => RFC6052_POSITIONS_FROM_48.map((at) => ipv4At(b, at)) },
  // 6to4 (RFC 3056): the relay forwards to the IPv4 in bits 16-47.
  { range: ipaddr.IPv6.parseCIDR("2002::/16"), carried: (b) => [ipv4At(b, [2, 3, 4, 5])] },
  // Teredo (RFC 4380): the server in bits 32-63 and the client, inverted, in the last 32 bits.
  { range: ipaddr.IPv6.parseCIDR("2001::/32"), carried: (b) => [ipv4At(b, [4, 5, 6, 7]), ipv4At(b, LAST_32_BITS, 0xff)] },
];

/** The IPv4 addresses an IPv6 address carries, or null when it is in none of the carrier ranges. */
function carriedIPv4s(ip: ipaddr.IPv6): ipaddr.IPv4[] | null {
  const carrier = IPV4_CARRIERS.find(({ range }) => ip.match(range));
  return carrier ? carrier.carried(ip.toByteArray()) : null;
}

/** ipaddr.js's "unicast" is what is left after its special ranges; the explicit list backs it up. */
function isGlobalIPv4(ip: ipaddr.IPv4): boolean {
  return ip.range() === "unicast" && !NON_GLOBAL_IPV4.some((cidr) => ip.match(cidr));
}

/** Inside 2000::/3, ipaddr.js names documentation, benchmarking, ORCHID and the other special blocks. */
function isGlobalIPv6(ip: ipaddr.IPv6): boolean {
  return ip.match(GLOBAL_UNICAST_IPV6) && ip.range() === "unicast";
}

/**
 * Webhook targets must be globally routable unicast addresses: loopback, private, link-local (cloud
 * metadata at 169.254.169.254 included), carrier-grade NAT, multicast, documentation and reserved
 * ranges are refused. An IPv6 address that carries an IPv4 address (mapped, compatible, NAT64,
 * 6to4, Teredo) is judged by what it carries, since that is where the packets end up.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const ip = ipaddr.parse(address);
  if (ip.kind() === "ipv4") return isGlobalIPv4(ip as ipaddr.IPv4);
  const carried = carriedIPv4s(ip as ipaddr.IPv6);
  return carried ? carried.every(isGlobalIPv4) : isGlobalIPv6(ip as ipaddr.IPv6);
}

/**
 * An IP literal as a socket takes it. ipaddr.js also reads shorthand IPv4 (`0x7f.1`, `2130706433`);
 * those are answered in dotted decimal so the address connected to is the one that was checked.
 */
function literalAddress(host: string): LookupAddress {
  const family = isIP(host);
  if (family) return { address: host, family };
  const ip = ipaddr.parse(host);
  return { address: ip.toString(), family: ip.kind() === "ipv4" ? 4 : 6 };
}

export class ForbiddenTargetError extends Error {}

/** `localhost` and the names under it, which resolvers answer with loopback addresses themselves (RFC 6761, 6.3). */
const isLocalhostName = (host: string) => /(^|\.)localhost\.?$/i.test(host);

/**
 * Why a host is a target that is not public by itself, with no resolution, or null: an IP literal
 * outside the public ranges (in any form the URL parser reads, which writes IPv4 in dotted decimal),
 * or a localhost name. Other names are judged when resolved, at each delivery (resolvePublicAddresses).
 */
export function privateByItself(hostname: string): string | null {
  const host = hostname.replace(/^\[(.*)\]$/, "$1");
  if (isLocalhostName(host)) return `${hostname} names this machine, which is not a public address`;
  if (!ipaddr.isValid(host)) return null;
  const { address } = literalAddress(host);
  return isPublicAddress(address) ? null : `${hostname} is ${address}, which is not a public address`;
}

/**
 * Resolves a host name and checks every address it has; an IP literal is checked as it is. Takes
 * `URL.hostname` as it comes, so an IPv6 literal may still be in brackets (`[::7f00:1]`).
 */
export async function resolvePublicAddresses(hostname: string): Promise<LookupAddress[]> {
  const host = hostname.replace(/^\[(.*)\]$/, "$1");
  const addresses = ipaddr.isValid(host) ? [literalAddress(host)] : await lookup(host, { all: true, verbatim: true });
  const forbidden = addresses.find((a) => !isPublicAddress(a.address));
  if (forbidden) throw new ForbiddenTargetError(`${hostname} resolves to ${forbidden.address}, which is not a public address`);
  return addresses;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for net.connect that refuses non-public addresses at connection time, so a DNS answer
 * that changed since the check (DNS rebinding) cannot reach an internal address.
 */
export function guardedLookup(hostname: string, options: { all?: boolean }, callback: LookupCallback): void {
  resolvePublicAddresses(hostname).then(
    (addresses) => (options.all ? callback(null, addresses) : callback(null, addresses[0]!.address, addresses[0]!.family)),
    (error: NodeJS.ErrnoException) => callback(error, ""),
  );
}
