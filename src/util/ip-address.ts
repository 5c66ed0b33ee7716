// net.isIP without node:net: the config's listen addresses are checked by every `config check`,
// `run` and reload, and node:net (with node:stream) costs a command about 4 ms to load for
// one regular expression. These are Node's own (lib/internal/net.js);
// test/util/ip-address.test.ts holds them against net.isIP.

const V4_SEG = '(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])';
const V4 = `(?:${V4_SEG}\\.){3}${V4_SEG}`;
const V6_SEG = '(?:[0-9a-fA-F]{1,4})';
const IPV4 = new RegExp(`^${V4}$`);
const IPV6 = new RegExp('^(?:'
  + `(?:${V6_SEG}:){7}(?:${V6_SEG}|:)|`
  + `(?:${V6_SEG}:){6}(?:${V4}|:${V6_SEG}|:)|`
  + `(?:${V6_SEG}:){5}(?::${V4}|(?::${V6_SEG}){1,2}|:)|`
  + `(?:${V6_SEG}:){4}(?:(?::${V6_SEG}){0,1}:${V4}|(?::${V6_SEG}){1,3}|:)|`
  + `(?:${V6_SEG}:){3}(?:(?::${V6_SEG}){0,2}:${V4}|(?::${V6_SEG}){1,4}|:)|`
  + `(?:${V6_SEG}:){2}(?:(?::${V6_SEG}){0,3}:${V4}|(?::${V6_SEG}){1,5}|:)|`
  + `(?:${V6_SEG}:){1}(?:(?::${V6_SEG}){0,4}:${V4}|(?::${V6_SEG}){1,6}|:)|`
  + `(?::(?:(?::${V6_SEG}){0,5}:${V4}|(?::${V6_SEG}){1,7}|:))`
  + ')(?:%[0-9a-zA-Z-.:]{1,})?$');

/** 4 for an IPv4 address, 6 for IPv6, 0 for anything else: as net.isIP. */
export function ipVersion(s: string): 0 | 4 | 6 {
  if (IPV4.test(s)) return 4;
  if (IPV6.test(s)) return 6;
  return 0;
}
