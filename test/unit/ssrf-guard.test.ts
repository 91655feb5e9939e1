import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../../core/adapters/sqlite/database.ts";
import { SqliteEventStore } from "../../core/adapters/sqlite/event-store.ts";
import { SqliteInspectionStore } from "../../core/adapters/sqlite/inspection-store.ts";
import { SqliteKeyStore } from "../../core/adapters/sqlite/key-store.ts";
import { isPublicAddress, resolvePublicAddresses } from "../../core/net/ssrf-guard.ts";
import { systemClock } from "../../core/time.ts";
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

  it("resolves names and refuses one that points inside", async () => {
    await expect(resolvePublicAddresses("localhost")).rejects.toThrow(/not a public address/);
    await expect(resolvePublicAddresses("[::1]")).rejects.toThrow(/not a public address/);
  });
});

describe("delivery-time check", () => {
  it("refuses a target that became private after creation, and records the attempt", async () => {
    const receiver = await new WebhookReceiver().start();
    const db = openDatabase(mkdtempSync(join(tmpdir(), "vi-ssrf-")));
    const inspections = new SqliteInspectionStore(db);
    const events = new SqliteEventStore(db);
    const keys = new SqliteKeyStore(db);
    const { accountId } = keys.createKey("a", "test", "hash-of-key", "abcd", "key_1", Date.now());
    // As if the name resolved to a public address at creation and to loopback now.
    const record = sampleInspection({ notifyUrl: receiver.url, accountId });
    await inspections.create(record, "hash", () => ({ id: "evt_ssrf0000000000000000000000", type: "inspection.created", data: "{}" }));
    const dispatcher = new WebhookDispatcher({
      events, keys, clock: systemClock, log: pino({ level: "silent" }),
      retryScheduleMs: [1000], timeoutMs: 2000, allowPrivateTargets: false, pollMs: 100,
    });
    const [event] = events.due(Date.now(), 10);
    await dispatcher.deliver(event!);
    const attempts = events.attempts([event!.id]).get(event!.id)!;
    expect(attempts).toHaveLength(1);
    expect(attempts[0]!.statusCode).toBeNull();
    expect(attempts[0]!.error).toMatch(/127\.0\.0\.1, which is not a public address/);
    expect(receiver.received).toHaveLength(0);
    await dispatcher.stop();
    await receiver.close();
    db.close();
  });
});
