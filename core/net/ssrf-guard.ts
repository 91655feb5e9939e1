import { lookup } from "node:dns/promises";
import type { LookupAddress } from "node:dns";
import ipaddr from "ipaddr.js";

/**
 * Webhook targets must be public unicast addresses: loopback, private, link-local (cloud metadata
 * at 169.254.169.254 included), carrier-grade NAT, multicast, reserved and IPv6 transition ranges
 * that can embed such addresses are refused. IPv4-mapped IPv6 is judged as the IPv4 it carries.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let ip = ipaddr.parse(address);
  if (ip.kind() === "ipv6" && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
  return ip.range() === "unicast";
}

export class ForbiddenTargetError extends Error {}

/** Resolves a host name and checks every address it has; an IP literal is checked as it is. */
export async function resolvePublicAddresses(hostname: string): Promise<LookupAddress[]> {
  const host = hostname.replace(/^\[|\]$/g, "");
  const addresses = ipaddr.isValid(host) ? [{ address: host, family: host.includes(":") ? 6 : 4 }] : await lookup(host, { all: true, verbatim: true });
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
