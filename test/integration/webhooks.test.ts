import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startService, type TestService, VALID_VIN } from "../helpers/service.ts";
import { create, walkaround } from "../helpers/walkaround.ts";
import { until, WebhookReceiver } from "../helpers/webhook-receiver.ts";

async function runInspection(svc: TestService, key: string, notifyUrl: string) {
  const made = await create(svc, key, { notify_url: notifyUrl });
  await walkaround(svc, key, made, { open: true, confirmVin: false, wait: false });
  return made.id;
}

describe("webhook delivery", () => {
  let svc: TestService;
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    // A short retry schedule, so a receiver that fails then recovers is seen within the test.
    svc = await startService({ WEBHOOK_RETRY_SCHEDULE_MS: "300,300,300" });
    receiver = await new WebhookReceiver().start();
  });
  afterAll(async () => {
    await svc.close();
    await receiver.close();
  });

  it("sends one signed event per state change, verifiable with the standardwebhooks library", async () => {
    const key = await svc.key("test", "signed");
    const secret = await svc.secret("test", "signed");
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    receiver.received.length = 0;
    const id = await runInspection(svc, key, receiver.url);
    await until(
      "5 deliveries",
      () => receiver.received.length,
      (n) => n >= 5,
    );
    const verifier = new Webhook(secret);
    const types = [];
    for (const r of receiver.received) {
      const payload = verifier.verify(r.body, {
        "webhook-id": r.headers["webhook-id"] as string,
        "webhook-timestamp": r.headers["webhook-timestamp"] as string,
        "webhook-signature": r.headers["webhook-signature"] as string,
      }) as any;
      expect(payload.id).toBe(r.headers["webhook-id"]);
      expect(payload.id).toMatch(/^evt_/);
      expect(payload.object).toBe("event");
      expect(payload.data.id).toBe(id);
      types.push(payload.type);
    }
    // No VIN was confirmed: the report asks for review, and says so with inspection.review_required.
    expect(types.sort()).toEqual([
      "inspection.completed",
      "inspection.created",
      "inspection.in_progress",
      "inspection.processing",
      "inspection.review_required",
    ]);
    const completed = receiver.events().find((e) => e.type === "inspection.completed")! as any;
    expect(completed.data.status).toBe("completed");
    expect(completed.data.report_url).toBe(`${svc.url}/v1/inspections/${id}/report`);
    // The customer never confirmed the VIN: a person should look before the grade is acted on.
    expect(completed.data.summary).toEqual({ findings: 0, grade: "none", needs_review: true, new_findings: null });

    // A tampered body fails verification with the same library.
    const r = receiver.received[0]!;
    expect(() => verifier.verify(r.body.replace("inspection", "inspectiom"), r.headers as Record<string, string>)).toThrow();

    // Each event shows its delivery and attempts over the API, once the dispatcher has recorded the
    // attempt, which it does after the receiver has answered (and, in a cluster, another replica reads).
    const events = await until(
      "every delivery recorded",
      async () => (await svc.api(key, "/v1/events?limit=10")).json(),
      (listed: any) => listed.data.length === 5 && listed.data.every((e: any) => e.delivery.status !== "pending"),
    );
    expect(events.data).toHaveLength(5);
    for (const e of events.data) {
      expect(e.delivery.status).toBe("succeeded");
      expect(e.delivery.attempts).toHaveLength(1);
      expect(e.delivery.attempts[0]).toMatchObject({ status_code: 200, error: null });
    }
    const one = await (await svc.api(key, `/v1/events/${events.data[0].id}`)).json();
    expect(one).toEqual(events.data[0]);
    expect((await svc.api(await svc.key("test", "other"), `/v1/events/${one.id}`)).status).toBe(404);
  });

  it("retries a failing receiver on the schedule and records every attempt", async () => {
    const key = await svc.key("test", "flaky");
    const flaky = await new WebhookReceiver().start();
    try {
      // The created event: fail twice, then recover.
      flaky.respond = (n) => (n < 2 ? 503 : 200);
      await svc.api(key, "/v1/inspections", { method: "POST", json: { vehicle: { vin: VALID_VIN }, notify_url: flaky.url } });
      await until(
        "three attempts",
        () => flaky.received.length,
        (n) => n >= 3,
      );
      const [event] = (await (await svc.api(key, "/v1/events")).json()).data;
      const e = await until(
        "succeeded",
        async () => (await svc.api(key, `/v1/events/${event.id}`)).json(),
        (x: any) => x.delivery.status === "succeeded",
      );
      expect(e.delivery.attempts.map((a: any) => a.status_code)).toEqual([503, 503, 200]);
      expect(e.delivery.attempts[0].error).toBe("HTTP 503");
      // The same event id every time: receivers dedupe by webhook-id.
      expect(new Set(flaky.received.map((r) => r.headers["webhook-id"])).size).toBe(1);
      const gaps = flaky.received.slice(1).map((r, i) => r.at - flaky.received[i]!.at);
      for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(250);
    } finally {
      await flaky.close();
    }
  });

  it("gives up after the last attempt and marks the event failed; redirects are not followed", async () => {
    const key = await svc.key("test", "down");
    const down = await new WebhookReceiver().start();
    const elsewhere = await new WebhookReceiver().start();
    try {
      down.respond = () => ({ redirect: elsewhere.url });
      await svc.api(key, "/v1/inspections", { method: "POST", json: { vehicle: { vin: VALID_VIN }, notify_url: down.url } });
      const [event] = (await (await svc.api(key, "/v1/events")).json()).data;
      const e = await until(
        "failed",
        async () => (await svc.api(key, `/v1/events/${event.id}`)).json(),
        (x: any) => x.delivery.status === "failed",
      );
      // Schedule of 3 waits: 4 attempts in all.
      expect(e.delivery.attempts).toHaveLength(4);
      expect(e.delivery.attempts.every((a: any) => a.status_code === 302 && /redirect/.test(a.error))).toBe(true);
      expect(e.delivery.next_attempt_at).toBeNull();
      expect(elsewhere.received).toHaveLength(0);
    } finally {
      await down.close();
      await elsewhere.close();
    }
  });

  it("records connection failures as attempts with an error and no status", async () => {
    const key = await svc.key("test", "refused");
    const gone = await new WebhookReceiver().start();
    const url = gone.url;
    await gone.close();
    await svc.api(key, "/v1/inspections", { method: "POST", json: { vehicle: { vin: VALID_VIN }, notify_url: url } });
    const [event] = (await (await svc.api(key, "/v1/events")).json()).data;
    const e = await until(
      "an attempt",
      async () => (await svc.api(key, `/v1/events/${event.id}`)).json(),
      (x: any) => x.delivery.attempts.length > 0,
    );
    expect(e.delivery.attempts[0].status_code).toBeNull();
    expect(e.delivery.attempts[0].error).toMatch(/ECONNREFUSED/);
  });
});

describe("SSRF guard", () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService({ WEBHOOKS_ALLOW_PRIVATE_TARGETS: "false" });
  });
  afterAll(() => svc.close());

  it.each([
    "http://127.0.0.1/hook",
    "http://localhost:8080/hook",
    "http://10.1.2.3/hook",
    "http://192.168.0.1/hook",
    "http://172.16.5.4/hook",
    "http://169.254.169.254/latest/meta-data",
    "http://100.100.100.200/",
    "http://224.0.0.1/",
    "http://[::1]/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "http://[::ffff:a9fe:a9fe]/hook",
    "http://[fd00:ec2::254]/",
    "http://[fe80::1]/",
    "http://0.0.0.0/",
  ])("refuses %s at creation", async (url) => {
    const res = await svc.api(await svc.key("test"), "/v1/inspections", {
      method: "POST",
      json: { vehicle: { vin: VALID_VIN }, notify_url: url },
    });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error).toMatchObject({ code: "parameter_invalid", param: "notify_url" });
  });
});
