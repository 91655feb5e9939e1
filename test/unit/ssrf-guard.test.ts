import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { checkNotifyUrl } from "../../core/net/notify-url.ts";
import { openDatabase } from "../../core/adapters/sqlite/database.ts";
import { SqliteEventStore } from "../../core/adapters/sqlite/sqlite-event-store.ts";
import { SqliteInspectionStore } from "../../core/adapters/sqlite/sqlite-inspection-store.ts";
import { SqliteKeyStore } from "../../core/adapters/sqlite/sqlite-key-store.ts";
import { isPublicAddress, resolvePublicAddresses } from "../../core/net/ssrf-guard.ts";
import { systemClock } from "../../core/runtime/time.ts";
import { WebhookDispatcher } from "../../operator/webhook-dispatcher.ts";
import { WebhookReceiver } from "../helpers/webhook-receiver.ts";
import { sampleInspection } from "../contract/fixtures.ts";

describe("isPublicAddress", () => {
  it.each([
    ["8.8.8.8", true],
    ["93.184.216.34", true],
    ["2606:4700::1111", true],
    ["127.0.0.1", false],
    ["10.0.0.1", false],
    ["172.31.255.255", false],
    ["192.168.1.1", false],
    ["169.254.169.254", false],
    ["100.64.0.1", false],
    ["0.0.0.0", false],
    ["255.255.255.255", false],
    ["224.0.0.251", false],
    ["::1", false],
    ["::", false],
    ["::ffff:127.0.0.1", false],
    ["::ffff:10.0.0.1", false],
    ["::ffff:8.8.8.8", true],
    ["fe80::1", false],
    ["fc00::1", false],
    ["ff02::1", false],
    ["2002:7f00:1::", false],
    ["not-an-ip", false],
  ])("%s → %s", (ip, ok) => {
    expect(isPublicAddress(ip)).toBe(ok);
  });

  // Every IPv6 form that carries an IPv4 address is judged by that IPv4 address, so each form is
  // tried with a private one (refused) and a public one (allowed).
  it.each([
    // IPv4-compatible, ::/96 (RFC 4291, deprecated)
    ["::7f00:1", false],
    ["::127.0.0.1", false],
    ["::a00:1", false],
    ["::a9fe:a9fe", false],
    ["::0.0.0.2", false],
    ["::808:808", true],
    // IPv4-mapped, ::ffff:0:0/96
    ["::ffff:a9fe:a9fe", false],
    ["::ffff:c000:201", false],
    // IPv4-translated, ::ffff:0:0:0/96 (RFC 6145)
    ["::ffff:0:7f00:1", false],
    ["::ffff:0:c0a8:101", false],
    ["::ffff:0:808:808", true],
    // NAT64 well-known prefix, 64:ff9b::/96 (RFC 6052)
    ["64:ff9b::7f00:1", false],
    ["64:ff9b::10.0.0.1", false],
    ["64:ff9b::808:808", true],
    // NAT64 local-use prefix, 64:ff9b:1::/48 (RFC 8215): the IPv4 can sit where any prefix length
    // from /48 to /96 puts it, so every such position must hold a public address.
    ["64:ff9b:1:808:8:808:808:808", true],
    ["64:ff9b:1:808:8:808:7f00:1", false],
    ["64:ff9b:1:7f08:8:808:808:808", false],
    ["64:ff9b:1::7f00:1", false],
    // 6to4, 2002::/16 (RFC 3056): the IPv4 is bits 16-47
    ["2002:a9fe:a9fe::1", false],
    ["2002:a00:1:1::1", false],
    ["2002:808:808::1", true],
    // Teredo, 2001::/32 (RFC 4380): server IPv4 in bits 32-63, client IPv4 inverted in the last 32
    ["2001:0:808:808::f7f7:f7f7", true],
    ["2001:0:a00:1::f7f7:f7f7", false],
    ["2001:0:808:808::80ff:fffe", false],
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", false], // RFC 4380's example: client 192.0.2.45 (TEST-NET-1)
  ])("embedded IPv4: %s → %s", (ip, ok) => {
    expect(isPublicAddress(ip)).toBe(ok);
  });

  it.each([
    ["2001:4860:4860::8888", true],
    ["2a00:1450:4001:80b::200e", true],
    ["2001:db8::1", false], // documentation
    ["3fff::1", false], // documentation (RFC 9637)
    ["2001:2::1", false], // benchmarking
    ["2001:10::1", false], // ORCHID (deprecated)
    ["2001:20::1", false], // ORCHIDv2
    ["2001:30::1", false], // drone remote ID
    ["2001:3::1", false], // AMT
    ["2001:4:112::1", false], // AS112
    ["2620:4f:8000::1", false], // AS112
    ["fec0::1", false], // site-local (deprecated)
    ["100::1", false], // discard
    ["5f00::1", false], // segment routing SIDs
    ["4000::1", false], // outside 2000::/3: not allocated for global unicast
    ["1::1", false],
    ["::1:0:0:1", false],
  ])("IPv6 special range: %s → %s", (ip, ok) => {
    expect(isPublicAddress(ip)).toBe(ok);
  });

  it.each([
    "0.1.2.3",
    "192.0.0.9",
    "192.0.2.1",
    "192.88.99.1",
    "198.18.0.1",
    "198.19.255.255",
    "198.51.100.1",
    "203.0.113.1",
    "240.0.0.1",
    "100.127.255.254",
  ])("IPv4 special-purpose block: %s is refused", (ip) => {
    expect(isPublicAddress(ip)).toBe(false);
  });

  it("resolves names and refuses one that points inside", async () => {
    await expect(resolvePublicAddresses("localhost")).rejects.toThrow(/not a public address/);
    await expect(resolvePublicAddresses("[::1]")).rejects.toThrow(/not a public address/);
    await expect(resolvePublicAddresses("[::7f00:1]")).rejects.toThrow(/not a public address/);
    await expect(resolvePublicAddresses("0x7f.1")).rejects.toThrow(/not a public address/);
  });

  it("answers an IP literal in the form a socket connects to", async () => {
    expect(await resolvePublicAddresses("0x8.0x8.0x8.0x8")).toEqual([{ address: "8.8.8.8", family: 4 }]);
    expect(await resolvePublicAddresses("134744072")).toEqual([{ address: "8.8.8.8", family: 4 }]);
    expect(await resolvePublicAddresses("[::808:808]")).toEqual([{ address: "::808:808", family: 6 }]);
  });
});

describe("checkNotifyUrl", () => {
  // As WHATWG URL hands the host over: brackets kept, IPv4 numbers in any base made dotted decimal.
  it.each([
    "http://[::127.0.0.1]/hooks",
    "http://[::7f00:1]/",
    "http://[0:0:0:0:0:0:127.0.0.1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:0:127.0.0.1]/",
    "http://[64:ff9b::169.254.169.254]/",
    "http://[2002:a9fe:a9fe::]/",
    "http://[2001:0:a00:1::f7f7:f7f7]/",
    "http://[2001:db8::1]/",
    "http://2130706433/",
    "http://0x7f.1/",
    "http://0177.0.0.1/",
    "http://127.1/",
    "http://127.0.0.1./",
    "http://0/",
    "http://localhost:8080/",
    "http://LOCALHOST./",
    "http://hooks.localhost/",
  ])("refuses %s", (raw) => {
    expect(() => checkNotifyUrl(raw, false, false)).toThrow(/notify_url must reach a public address/);
  });

  it.each([
    "http://[::8.8.8.8]/",
    "http://[::ffff:8.8.8.8]/",
    "http://[64:ff9b::8.8.8.8]/",
    "http://[2002:808:808::1]/",
    "http://[2606:4700::1111]/",
    "http://134744072/",
    "http://0x8.0x8.0x8.0x8/",
    // A name is resolved and checked at each delivery, not at creation: one that does not resolve now is taken.
    "https://no-such-host.invalid/hooks",
    "https://localhost.example.com/",
  ])("accepts %s", (raw) => {
    expect(() => checkNotifyUrl(raw, false, false)).not.toThrow();
  });
});

/** Delivers the one event of an inspection whose notify_url is `notifyUrl`, and returns its attempts. */
async function deliverOnceTo(notifyUrl: (receiverUrl: string) => string) {
  const receiver = await new WebhookReceiver().start();
  const db = openDatabase(mkdtempSync(join(tmpdir(), "vi-ssrf-")));
  const events = new SqliteEventStore(db);
  const keys = new SqliteKeyStore(db);
  const { accountId } = await keys.createKey("a", "test", "hash-of-key", "abcd", "key_1", Date.now());
  const record = sampleInspection({ notifyUrl: notifyUrl(receiver.url), accountId });
  await new SqliteInspectionStore(db).create(record, "hash", () => ({
    id: "evt_ssrf0000000000000000000000",
    type: "inspection.created",
    data: "{}",
  }));
  const dispatcher = new WebhookDispatcher({
    events,
    keys,
    clock: systemClock,
    log: pino({ level: "silent" }),
    retryScheduleMs: [1000],
    timeoutMs: 2000,
    allowPrivateTargets: false,
    pollMs: 100,
  });
  const [event] = await events.due(Date.now(), 10);
  await dispatcher.deliver(event!);
  const attempts = (await events.attempts([event!.id])).get(event!.id)!;
  const received = receiver.received.length;
  await dispatcher.stop();
  await receiver.close();
  db.close();
  return { attempts, received };
}

describe("delivery-time check", () => {
  it("refuses a target that became private after creation, and records the attempt", async () => {
    // As if the name resolved to a public address at creation and to loopback now.
    const { attempts, received } = await deliverOnceTo((url) => url);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]!.statusCode).toBeNull();
    expect(attempts[0]!.error).toMatch(/127\.0\.0\.1, which is not a public address/);
    expect(received).toBe(0);
  });

  it("refuses loopback wrapped in an IPv4-compatible IPv6 address", async () => {
    const { attempts, received } = await deliverOnceTo((url) => url.replace("127.0.0.1", "[::127.0.0.1]"));
    expect(attempts).toHaveLength(1);
    expect(attempts[0]!.statusCode).toBeNull();
    expect(attempts[0]!.error).toMatch(/::7f00:1, which is not a public address/);
    expect(received).toBe(0);
  });
});
