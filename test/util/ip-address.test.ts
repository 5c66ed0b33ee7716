import { describe, expect, it } from 'vitest';
import { isIP } from 'node:net';
import { ipVersion } from '../../src/util/ip-address.js';

// src/util/ip-address.ts copies Node's address patterns to spare node:net: both must agree.

function samples(): string[] {
  const out = ['', '0.0.0.0', '127.0.0.1', '255.255.255.255', '256.1.1.1', '1.2.3', '1.2.3.4.5', '01.2.3.4', '1.2.3.04', ' 1.2.3.4', '1.2.3.4 ',
    '::', '::1', '1::', 'fe80::1%eth0', 'fe80::1%', '::ffff:1.2.3.4', '::ffff:1.2.3.256', '1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7:8:9', '1:2:3:4:5:6:7::',
    '1::2::3', 'g::1', '12345::1', '[::1]', 'localhost', 'example.com', '1.2.3.4%x', 'a.b.c.d', '::1.2.3.4', '1:2:3:4:5:6:1.2.3.4', '1:2:3:4:5:6:7:1.2.3.4'];
  // Random strings over the characters of addresses.
  let seed = 7;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return seed % n;
  };
  const chars = '0123456789abcdefABCDEFg:.%-';
  for (let i = 0; i < 20_000; i++) {
    let s = '';
    for (let n = rand(24); n > 0; n--) s += chars[rand(chars.length)];
    out.push(s);
  }
  // Well-formed ones, mutated.
  for (let i = 0; i < 5000; i++) {
    const v6 = Array.from({ length: 8 }, () => rand(0x10000).toString(16));
    const cut = rand(8);
    out.push(v6.join(':'), `${v6.slice(0, cut).join(':')}::${v6.slice(cut + 1).join(':')}`, `${rand(300)}.${rand(300)}.${rand(300)}.${rand(300)}`);
  }
  return out;
}

describe('ipVersion', () => {
  it('says what net.isIP says', () => {
    const all = samples();
    expect(all.filter((s) => ipVersion(s) !== isIP(s))).toEqual([]);
    // Both kinds and non-addresses are among the samples.
    for (const v of [0, 4, 6]) expect(all.filter((s) => isIP(s) === v).length).toBeGreaterThan(500);
  });
});
