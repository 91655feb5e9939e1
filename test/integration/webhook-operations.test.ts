import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiError } from "../../core/domain/errors.ts";
import { rotateWebhookSecret, sendTestWebhook } from "../../core/operations/webhooks.ts";
import { startService, VALID_VIN, type TestService } from "../helpers/service.ts";
import { type Received, until, WebhookReceiver } from "../helpers/webhook-receiver.ts";

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

const signatureHeaders = (r: Received) => ({
  "webhook-id": r.headers["webhook-id"] as string,
  "webhook-timestamp": r.headers["webhook-timestamp"] as string,
  "webhook-signature": r.headers["webhook-signature"] as string,
});
const verifies = (secret: string, r: Received) => {
  try {
    new Webhook(secret).verify(r.body, signatureHeaders(r));
    return true;
  } catch {
    return false;
  }
};

describe("webhook operations", () => {
  let svc: TestService;
  let receiver: WebhookReceiver;
  // A short retry schedule (4 attempts), so a resent event's fresh schedule runs out within the test.
  beforeAll(async () => {
    svc = await startService({ WEBHOOK_RETRY_SCHEDULE_MS: "200,200,200" });
    receiver = await new WebhookReceiver().start();
  });
  afterAll(async () => {
    await svc.close();
    await receiver.close();
  });

  const rotate = (key: string, json?: unknown, headers?: Record<string, string>) =>
    svc.api(key, "/v1/webhook_secret/rotate", { method: "POST", json, headers });

  /** Creates an inspection notifying `url` and returns its inspection.created delivery once received. */
  async function deliveryTo(key: string, to: WebhookReceiver): Promise<Received> {
    const before = to.received.length;
    const res = await svc.api(key, "/v1/inspections", { method: "POST", json: { vehicle: { vin: VALID_VIN }, notify_url: to.url } });
    expect(res.status).toBe(201);
    const id = (await res.json()).id;
    return until(
      "the created event's delivery",
      () => to.received.slice(before).find((r) => JSON.parse(r.body).data.id === id),
      (r) => r !== undefined,
    ) as Promise<Received>;
  }

  it("shows the current secret; a rotation keeps the old one signing beside the new for the overlap", async () => {
    const key = await svc.key("test", "rotating");
    const old = await svc.secret("test", "rotating");
    const shown = await (await svc.api(key, "/v1/webhook_secret")).json();
    expect(shown).toEqual({
      object: "webhook_secret",
      secret: old,
      created_at: expect.stringMatching(TIMESTAMP),
      previous_secret_expires_at: null,
    });

    const res = await rotate(key, { overlap_hours: 2 });
    expect(res.status).toBe(200);
    const rotated = await res.json();
    expect(rotated.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(rotated.secret).not.toBe(old);
    expect(rotated.previous_secret_expires_at).toMatch(TIMESTAMP);
    const overlapEndsIn = Date.parse(rotated.previous_secret_expires_at) - Date.now();
    expect(overlapEndsIn).toBeGreaterThan(2 * 3_600_000 - 10_000);
    expect(overlapEndsIn).toBeLessThanOrEqual(2 * 3_600_000);
    expect(await (await svc.api(key, "/v1/webhook_secret")).json()).toEqual(rotated);
    // The CLI's `webhooks secret` prints the new one too.
    expect(await svc.secret("test", "rotating")).toBe(rotated.secret);

    const delivery = await deliveryTo(key, receiver);
    expect((delivery.headers["webhook-signature"] as string).split(" ")).toHaveLength(2);
    expect(verifies(rotated.secret, delivery)).toBe(true);
    expect(verifies(old, delivery)).toBe(true);
    expect(verifies(await svc.secret("test", "someone-else"), delivery)).toBe(false);
  });

  it("with an overlap of 0 the old secret stops at once; rotating again drops the earlier previous secret", async () => {
    const key = await svc.key("test", "abrupt");
    const first = await svc.secret("test", "abrupt");
    const second = await (await rotate(key, { overlap_hours: 0 })).json();
    expect(second.previous_secret_expires_at).toBeNull();
    const alone = await deliveryTo(key, receiver);
    expect((alone.headers["webhook-signature"] as string).split(" ")).toHaveLength(1);
    expect(verifies(second.secret, alone)).toBe(true);
    expect(verifies(first, alone)).toBe(false);

    // No body: the default overlap of 24 hours.
    const third = await (await rotate(key)).json();
    expect(Date.parse(third.previous_secret_expires_at) - Date.now()).toBeGreaterThan(24 * 3_600_000 - 10_000);
    const fourth = await (await rotate(key, {})).json();
    const delivery = await deliveryTo(key, receiver);
    expect(verifies(fourth.secret, delivery)).toBe(true);
    expect(verifies(third.secret, delivery)).toBe(true);
    expect(verifies(second.secret, delivery)).toBe(false);
  });

  it("a retried rotation with the same Idempotency-Key answers the same secret and rotates once", async () => {
    const key = await svc.key("test", "idempotent");
    const old = await svc.secret("test", "idempotent");
    const headers = { "idempotency-key": "rotate-once" };
    const a = await rotate(key, { overlap_hours: 1 }, headers);
    const b = await rotate(key, { overlap_hours: 1 }, headers);
    expect(b.status).toBe(200);
    expect(b.headers.get("idempotent-replayed")).toBe("true");
    const [first, replayed] = [await a.json(), await b.json()];
    expect(replayed).toEqual(first);
    // Had it rotated twice, the secret shown would be a third one and `old` would no longer sign.
    expect((await (await svc.api(key, "/v1/webhook_secret")).json()).secret).toBe(first.secret);
    const delivery = await deliveryTo(key, receiver);
    expect(verifies(old, delivery)).toBe(true);
  });

  it.each([
    [{ overlap_hours: -1 }, "parameter_invalid"],
    [{ overlap_hours: 169 }, "parameter_invalid"],
    [{ overlap_hours: 1.5 }, "parameter_invalid"],
    [{ overlap_hours: "24" }, "parameter_invalid"],
    [{ overlap_hours: null }, "parameter_invalid"],
  ])("refuses %j with 400 naming overlap_hours", async (json, code) => {
    const key = await svc.key("test", "refused");
    const before = await svc.secret("test", "refused");
    const res = await rotate(key, json);
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatchObject({ type: "invalid_request_error", code, param: "overlap_hours" });
    expect(await svc.secret("test", "refused")).toBe(before);
  });

  it("refuses an unknown field of the rotation", async () => {
    const res = await rotate(await svc.key("test"), { overlap: 2 });
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatchObject({ code: "parameter_unknown", param: "overlap" });
  });

  it("resends a delivered event: the same webhook-id reaches the receiver again, and the attempt numbers go on", async () => {
    const key = await svc.key("test", "resend");
    const first = await deliveryTo(key, receiver);
    const eventId = first.headers["webhook-id"] as string;
    const delivered = await until(
      "succeeded",
      async () => (await svc.api(key, `/v1/events/${eventId}`)).json(),
      (e) => e.delivery.status === "succeeded",
    );
    expect(delivered.delivery.attempts.map((a: { number: number }) => a.number)).toEqual([1]);

    const res = await svc.api(key, `/v1/events/${eventId}/resend`, { method: "POST" });
    expect(res.status).toBe(202);
    const resent = await res.json();
    expect(resent).toMatchObject({ id: eventId, object: "event", type: "inspection.created" });
    expect(resent.delivery.status).toBe("pending");
    expect(resent.delivery.next_attempt_at).toMatch(TIMESTAMP);

    const again = await until(
      "the resent delivery",
      () => receiver.received.filter((r) => r.headers["webhook-id"] === eventId),
      (rs) => rs.length === 2,
    );
    expect(again[1]!.body).toBe(first.body);
    expect(verifies(await svc.secret("test", "resend"), again[1]!)).toBe(true);
    const after = await until(
      "succeeded again",
      async () => (await svc.api(key, `/v1/events/${eventId}`)).json(),
      (e) => e.delivery.status === "succeeded" && e.delivery.attempts.length === 2,
    );
    expect(after.delivery.attempts.map((a: { number: number }) => a.number)).toEqual([1, 2]);
  });

  it("gives a resent event that had failed for good a fresh retry schedule", async () => {
    const key = await svc.key("test", "resend-failed");
    const down = await new WebhookReceiver().start();
    try {
      down.respond = () => 500;
      const eventId = (await deliveryTo(key, down)).headers["webhook-id"] as string;
      const failed = await until(
        "failed",
        async () => (await svc.api(key, `/v1/events/${eventId}`)).json(),
        (e) => e.delivery.status === "failed",
      );
      expect(failed.delivery.attempts).toHaveLength(4);
      expect((await svc.api(key, `/v1/events/${eventId}/resend`, { method: "POST", json: {} })).status).toBe(202);
      // Counted from the resend, the schedule allows 4 attempts again, not 1.
      const again = await until(
        "failed again",
        async () => (await svc.api(key, `/v1/events/${eventId}`)).json(),
        (e) => e.delivery.status === "failed" && e.delivery.attempts.length > 4,
      );
      expect(again.delivery.attempts.map((a: { number: number }) => a.number)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      expect(down.received).toHaveLength(8);
      const gaps = down.received.slice(5).map((r, i) => r.at - down.received[i + 4]!.at);
      for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(150);
    } finally {
      await down.close();
    }
  });

  it("refuses to resend an event with nowhere to go (409), and another account's or an unknown event (404)", async () => {
    const key = await svc.key("test", "no-notify");
    await svc.api(key, "/v1/inspections", { method: "POST", json: { vehicle: { vin: VALID_VIN } } });
    const [event] = (await (await svc.api(key, "/v1/events")).json()).data;
    expect(event.delivery.status).toBe("none");
    const res = await svc.api(key, `/v1/events/${event.id}/resend`, { method: "POST" });
    expect(res.status).toBe(409);
    expect((await res.json()).error).toMatchObject({ type: "conflict_error", code: "event_not_deliverable" });

    const owner = await svc.key("test", "owner");
    const theirs = (await deliveryTo(owner, receiver)).headers["webhook-id"] as string;
    for (const [who, id] of [
      [await svc.key("test", "intruder"), theirs],
      [await svc.key("live", "owner"), theirs],
      [owner, "evt_000000000000000000000000"],
    ] as const) {
      const missing = await svc.api(who, `/v1/events/${id}/resend`, { method: "POST" });
      expect(missing.status).toBe(404);
      expect((await missing.json()).error).toMatchObject({ code: "resource_missing", param: "id" });
    }
  });

  it("sends one signed test event to a URL, not stored and not retried, and reports how it went", async () => {
    const key = await svc.key("test", "tester");
    const secret = await svc.secret("test", "tester");
    const before = receiver.received.length;
    const res = await svc.api(key, "/v1/webhook_tests", { method: "POST", json: { url: receiver.url } });
    expect(res.status).toBe(200);
    const result = await res.json();
    expect(result).toEqual({
      object: "webhook_test",
      event_id: expect.stringMatching(/^evt_[a-z0-9]{24}$/),
      url: receiver.url,
      succeeded: true,
      status_code: 200,
      latency_ms: expect.any(Number),
      error: null,
    });
    const got = receiver.received.slice(before);
    expect(got).toHaveLength(1);
    expect(got[0]!.headers["webhook-id"]).toBe(result.event_id);
    const payload = new Webhook(secret).verify(got[0]!.body, signatureHeaders(got[0]!)) as Record<string, unknown>;
    expect(payload).toEqual({
      id: result.event_id,
      object: "event",
      type: "webhook.test",
      created_at: expect.stringMatching(TIMESTAMP),
      livemode: false,
      data: { object: "webhook_test", message: expect.any(String) },
    });
    expect((await (await svc.api(key, "/v1/events")).json()).data).toEqual([]);
    expect((await svc.api(key, `/v1/events/${result.event_id}`)).status).toBe(404);
  });

  it("reports a failing receiver as succeeded false, once, without retrying", async () => {
    const key = await svc.key("test", "tester-500");
    const failing = await new WebhookReceiver().start();
    try {
      failing.respond = () => 500;
      const res = await svc.api(key, "/v1/webhook_tests", { method: "POST", json: { url: failing.url } });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ succeeded: false, status_code: 500, error: "HTTP 500" });
      await new Promise((r) => setTimeout(r, 1_000));
      expect(failing.received).toHaveLength(1);
    } finally {
      await failing.close();
    }
  });

  it("signs a test event with both secrets during an overlap", async () => {
    const key = await svc.key("test", "tester-overlap");
    const old = await svc.secret("test", "tester-overlap");
    const rotated = await (await rotate(key, { overlap_hours: 1 })).json();
    const before = receiver.received.length;
    expect((await (await svc.api(key, "/v1/webhook_tests", { method: "POST", json: { url: receiver.url } })).json()).succeeded).toBe(true);
    const got = receiver.received[before]!;
    expect(verifies(rotated.secret, got)).toBe(true);
    expect(verifies(old, got)).toBe(true);
  });

  it("refuses a test URL that is not http(s), or http with a live key, naming url", async () => {
    for (const [key, url] of [
      [await svc.key("test"), "ftp://example.com/hook"],
      [await svc.key("test"), "not a url"],
      [await svc.key("live"), "http://example.com/hook"],
    ] as const) {
      const res = await svc.api(key, "/v1/webhook_tests", { method: "POST", json: { url } });
      expect(res.status, url).toBe(400);
      expect((await res.json()).error).toMatchObject({ code: "parameter_invalid", param: "url" });
    }
    const missing = await svc.api(await svc.key("test"), "/v1/webhook_tests", { method: "POST", json: {} });
    expect((await missing.json()).error).toMatchObject({ code: "parameter_missing", param: "url" });
  });

  it("called as the dashboard calls them, refuses what the API's schemas would", async () => {
    const scope = { accountId: "acct_direct", livemode: false };
    const s = { keys: { rotateWebhookSecret: () => expect.unreachable() } as never, clock: { now: () => Date.now() } };
    for (const hours of [-1, 169, 0.5, Number.NaN]) {
      const error = await rotateWebhookSecret(s, scope, hours).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ApiError);
      expect(error).toMatchObject({ code: "parameter_invalid", param: "overlap_hours" });
    }
    await expect(sendTestWebhook({ ...s, config: svc.config }, scope, "not a url")).rejects.toMatchObject({
      code: "parameter_invalid",
      param: "url",
    });
  });

  it("`webhooks rotate` prints only the new secret, and refuses a bad --overlap-hours", async () => {
    const run = promisify(execFile);
    const cli = (...args: string[]) =>
      run(process.execPath, [join(import.meta.dirname, "../../bin/vehicle-inspection.ts"), ...args], {
        env: { ...process.env, ...svc.cliEnv },
      });
    const key = await svc.key("live", "cli");
    const old = await svc.secret("live", "cli");
    const { stdout } = await cli("webhooks", "rotate", "--env", "live", "--account", "cli", "--overlap-hours", "3");
    expect(stdout).toMatch(/^whsec_[A-Za-z0-9+/]+=*\n$/);
    const shown = await (await svc.api(key, "/v1/webhook_secret")).json();
    expect(shown.secret).toBe(stdout.trim());
    expect(shown.secret).not.toBe(old);
    expect(Date.parse(shown.previous_secret_expires_at) - Date.now()).toBeGreaterThan(3 * 3_600_000 - 30_000);
    for (const bad of ["169", "-1", "1.5", "", "24h"]) {
      await expect(cli("webhooks", "rotate", "--env", "live", "--account", "cli", `--overlap-hours=${bad}`)).rejects.toMatchObject({
        code: 2,
        stderr: expect.stringContaining("--overlap-hours"),
      });
    }
    expect((await (await svc.api(key, "/v1/webhook_secret")).json()).secret).toBe(shown.secret);
  });
});

describe("webhook tests when private targets are not allowed", () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService({ WEBHOOKS_ALLOW_PRIVATE_TARGETS: "false" });
  });
  afterAll(() => svc.close());

  it.each(["http://127.0.0.1/hook", "http://[::1]/hook", "http://169.254.169.254/latest/meta-data", "http://10.0.0.1/"])(
    "refuses %s with 400 naming url, as notify_url is refused",
    async (url) => {
      const res = await svc.api(await svc.key("test"), "/v1/webhook_tests", { method: "POST", json: { url } });
      expect(res.status).toBe(400);
      const { error } = await res.json();
      expect(error).toMatchObject({ code: "parameter_invalid", param: "url" });
      expect(error.message).toMatch(/not a public address/);
    },
  );
});
