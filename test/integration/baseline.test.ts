import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DAMAGE_VALID, DAMAGED_CASES } from "../helpers/photos.ts";
import { OTHER_VALID_VIN, startService, type TestService, withModels } from "../helpers/service.ts";
import { create, walkaround } from "../helpers/walkaround.ts";
import { until, WebhookReceiver } from "../helpers/webhook-receiver.ts";

/**
 * Before and after (contract, "Added on 2026-11-26"): an inspection made with a baseline_inspection
 * (a rental's pick-up, say) is compared with it, and its report says which damage is new.
 */
const report = async (svc: TestService, key: string, id: string) => (await svc.api(key, `/v1/inspections/${id}/report`)).json();
const photo = (i: number) => ({
  angle: DAMAGED_CASES[i]!.angle,
  bytes: readFileSync(join(DAMAGE_VALID, "images", DAMAGED_CASES[i]!.file)),
});

describe("a baseline inspection, without models", () => {
  let svc: TestService;
  let key: string;
  let baseline: string;
  beforeAll(async () => {
    svc = await startService();
    key = await svc.key("test");
    const m = await create(svc, key);
    await walkaround(svc, key, m);
    baseline = m.id;
  }, 120_000);
  afterAll(() => svc.close());

  const refused = async (k: string, body: Record<string, unknown>, says: RegExp) => {
    const res = await svc.api(k, "/v1/inspections", { method: "POST", json: { vehicle: { vin: "1HGCM82633A004352" }, ...body } });
    expect(res.status).toBe(400);
    const { error } = await res.json();
    expect(error).toMatchObject({ type: "invalid_request_error", code: "parameter_invalid", param: "baseline_inspection" });
    expect(error.message).toMatch(says);
  };

  it("refuses a baseline of another account or environment, one not completed, one of another vehicle, and a malformed id", async () => {
    await refused(await svc.key("test", "acct_other"), { baseline_inspection: baseline }, /No inspection/);
    await refused(await svc.key("live"), { baseline_inspection: baseline }, /No inspection/);
    const open = await create(svc, key);
    await refused(key, { baseline_inspection: open.id }, /is created; only a completed inspection/);
    await refused(key, { baseline_inspection: baseline, vehicle: { vin: OTHER_VALID_VIN } }, /another vehicle/);
    await refused(key, { baseline_inspection: "nope" }, /./);
  });

  it("shows the baseline on the inspection, and a comparison with nothing new in the report and the completed event", async () => {
    const receiver = await new WebhookReceiver().start();
    try {
      const m = await create(svc, key, { baseline_inspection: baseline, notify_url: receiver.url });
      const done = await walkaround(svc, key, m);
      expect(done).toMatchObject({ status: "completed", baseline_inspection: baseline, summary: { new_findings: 0 } });
      const r = await report(svc, key, m.id);
      expect(r.comparison).toEqual({ baseline_inspection: baseline, new: [], worsened: [], preexisting: [], not_seen: [] });
      expect(r.summary.new_findings).toBe(0);
      const completed = await until(
        "inspection.completed",
        () => receiver.received.map((x) => ({ x, e: JSON.parse(x.body) })).find(({ e }) => e.type === "inspection.completed"),
        Boolean,
      );
      new Webhook(await svc.secret("test")).verify(completed!.x.body, completed!.x.headers as Record<string, string>);
      expect(completed!.e.data).toMatchObject({ baseline_inspection: baseline, summary: { new_findings: 0 } });
      // Without a baseline there is nothing to compare.
      const alone = await create(svc, key);
      expect((await walkaround(svc, key, alone)).summary.new_findings).toBeNull();
      expect((await report(svc, key, alone.id)).comparison).toBeNull();
    } finally {
      await receiver.close();
    }
  });

  it("holds an Idempotency-Key to its baseline: the same request answers the same inspection, another baseline is 422", async () => {
    const other = await create(svc, key);
    await walkaround(svc, key, other);
    const body = { vehicle: { vin: "1HGCM82633A004352" }, baseline_inspection: baseline };
    const headers = { "idempotency-key": `baseline-${Date.now()}` };
    const first = await svc.api(key, "/v1/inspections", { method: "POST", json: body, headers });
    const again = await svc.api(key, "/v1/inspections", { method: "POST", json: body, headers });
    expect(first.status).toBe(201);
    expect((await again.json()).id).toBe((await first.json()).id);
    const changed = await svc.api(key, "/v1/inspections", { method: "POST", json: { ...body, baseline_inspection: other.id }, headers });
    expect(changed.status).toBe(422);
  });
});

describe("a baseline inspection, with the models", () => {
  let svc: TestService;
  let key: string;
  beforeAll(async () => {
    svc = await startService(withModels);
    key = await svc.key("test");
  }, 120_000);
  afterAll(() => svc.close());

  it("calls the damage that was there at pick-up pre-existing and the one that came since new; a review that rejects the new one leaves nothing new", async () => {
    // Pick-up: a shattered windscreen at the front. Return: the same, and a flat tyre since.
    const pickUp = await create(svc, key);
    await walkaround(svc, key, pickUp, { over: [photo(0)] });
    const before = await report(svc, key, pickUp.id);
    const shatterBefore = before.findings.filter((f: any) => f.type === "glass_shatter");
    expect(shatterBefore.length).toBeGreaterThan(0);

    const back = await create(svc, key, { baseline_inspection: pickUp.id });
    const done = await walkaround(svc, key, back, { over: [photo(0), photo(1)] });
    const after = await report(svc, key, back.id);
    const byId = new Map(after.findings.map((f: any) => [f.id, f]));
    const tyre = after.findings.filter((f: any) => f.type === "tire_flat");
    expect(tyre.length).toBeGreaterThan(0);
    // Every finding is sorted one way or the other.
    const pre = after.comparison.preexisting.map((p: any) => p.finding);
    expect([...after.comparison.new, ...pre].sort()).toEqual(after.findings.map((f: any) => f.id).sort());
    for (const t of tyre) expect(after.comparison.new).toContain(t.id);
    for (const p of after.comparison.preexisting) {
      const now = byId.get(p.finding) as any;
      const then = before.findings.find((f: any) => f.id === p.baseline_finding);
      expect([now.part, now.type]).toEqual([then.part, then.type]);
    }
    expect(pre.length).toBeGreaterThanOrEqual(shatterBefore.length);
    expect(after.findings.filter((f: any) => f.type === "glass_shatter").every((f: any) => pre.includes(f.id))).toBe(true);
    expect(after.summary.new_findings).toBe(after.comparison.new.length);
    expect(done.summary.new_findings).toBe(after.comparison.new.length);

    // A person rejects the new damage: nothing new is left.
    const reviewed = await svc.api(key, `/v1/inspections/${back.id}/review`, {
      method: "POST",
      json: { decisions: after.comparison.new.map((id: string) => ({ finding: id, action: "reject" })) },
    });
    expect(reviewed.status).toBe(200);
    const r = await reviewed.json();
    expect(r.comparison.new).toEqual([]);
    expect(r.summary.new_findings).toBe(0);
    expect((await (await svc.api(key, `/v1/inspections/${back.id}`)).json()).summary.new_findings).toBe(0);
  }, 240_000);
});
