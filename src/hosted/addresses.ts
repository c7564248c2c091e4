/**
 * Which network addresses a published agent may be reached at (gateway §7 "Network safety"):
 * public unicast only. The ranges are `ipaddr.js`'s; this module only decides which of them
 * pass, and reads host strings the way a connection would.
 *
 * Refused: loopback, private (RFC 1918, IPv6 unique local), link-local (cloud metadata lives at
 * 169.254.169.254 and fd00:ec2::254), carrier-grade NAT (100.64/10, where Alibaba's metadata
 * is), multicast, broadcast, unspecified, reserved and documentation ranges, every IPv6
 * transition form that embeds an IPv4 address (IPv4-mapped, IPv4-compatible, NAT64 64:ff9b::/96
 * and 64:ff9b:1::/48, 6to4, Teredo), and any IPv6 address outside global unicast 2000::/3.
 */
import ipaddr from 'ipaddr.js';

/** The one IPv6 block that holds public unicast addresses (RFC 4291 §2.4). */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

/**
 * Reads `host` as an IP address the way a resolver would, or null when it is a name: brackets
 * of an IPv6 literal and one trailing dot are dropped, and IPv4 written in decimal (`2130706433`),
 * octal (`0177.0.0.1`), hex (`0x7f.0.0.1`, `0x7f000001`) or with fewer parts (`127.1`) is an
 * address. An IPv6 zone (`fe80::1%eth0`) is kept in the string and refused by {@link refusalOf}.
 */
export function literalAddress(host: string): string | null {
  let text = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (text.endsWith('.')) text = text.slice(0, -1);
  if (text.includes('%')) return text;
  return ipaddr.isValid(text) ? ipaddr.parse(text).toString() : null;
}

/**
 * Why `address` (an IP literal as {@link literalAddress} or a resolver gives it) must not be
 * connected to: its range, e.g. `loopback`, `private`, `ipv4Mapped`, `rfc6052` (NAT64); or null
 * when it is public unicast.
 */
export function refusalOf(address: string): string | null {
  if (address.includes('%')) return 'scoped (an IPv6 zone is link-local)';
  if (!ipaddr.isValid(address)) return 'not an IP address';
  const parsed = ipaddr.parse(address);
  const range = parsed.range();
  if (range !== 'unicast') return range;
  if (parsed.kind() === 'ipv6' && !parsed.match(GLOBAL_UNICAST_V6)) return 'outside IPv6 global unicast (2000::/3)';
  return null;
}
