/**
 * A set of IP address ranges in CIDR notation (`127.0.0.0/8`, `10.1.0.0/16`, `::1/128`, or a
 * bare address for one host), matched with node's `net.BlockList`. An IPv4 address mapped into
 * IPv6 (`::ffff:127.0.0.1`, what a dual-stack server reports for an IPv4 caller) matches the
 * IPv4 ranges.
 *
 * Used for `server.readyDetailFrom`: which callers of `/readyz` get its detail.
 */
// (`BlockList` is a getter of node:net, read here when a list is made: scripts/bundle.mjs)
import net, { isIP } from 'node:net';

/** Loopback: what `readyDetail: loopback` meant before `readyDetailFrom` existed. */
export const LOOPBACK_RANGES: readonly string[] = ['127.0.0.0/8', '::1/128'];

interface Cidr {
  address: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
}

/** `a.b.c.d/n`, `x:y::z/n` or a bare address; an error message for anything else. */
export function parseCidr(text: string): Cidr | string {
  const slash = text.indexOf('/');
  const address = (slash < 0 ? text : text.slice(0, slash)).trim();
  const version = isIP(address);
  if (version === 0) return `'${text}' is not an IP address or range (e.g. 127.0.0.0/8, 10.1.0.0/16, ::1/128)`;
  const family = version === 4 ? 'ipv4' : 'ipv6';
  const max = version === 4 ? 32 : 128;
  const prefixText = slash < 0 ? String(max) : text.slice(slash + 1).trim();
  const prefix = /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
  if (!(prefix >= 0 && prefix <= max)) return `'${text}': the prefix length after '/' is 0 to ${max} for an ${family === 'ipv4' ? 'IPv4' : 'IPv6'} address`;
  return { address, prefix, family };
}

export class AddressRanges {
  private readonly list = new net.BlockList();

  /** Throws on a range `parseCidr` refuses (the config schema checks them first). */
  constructor(readonly ranges: readonly string[]) {
    for (const r of ranges) {
      const c = parseCidr(r);
      if (typeof c === 'string') throw new Error(c);
      this.list.addSubnet(c.address, c.prefix, c.family);
    }
  }

  /** Whether `address` (as in `socket.remoteAddress`) is in one of the ranges. */
  has(address: string | undefined): boolean {
    if (address === undefined) return false;
    const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
    const a = mapped ? mapped[1]! : address;
    const version = isIP(a);
    if (version === 0) return false;
    return this.list.check(a, version === 4 ? 'ipv4' : 'ipv6');
  }
}
