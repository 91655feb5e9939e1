import { readFileSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_REVIEWS } from "../../core/domain/review.ts";
import { DAMAGE_VALID, DAMAGED_CASES, freshPhotos, severityPhoto } from "../helpers/photos.ts";
import { startService, type TestService, withModels } from "../helpers/service.ts";
import { create, type Made, walkaround } from "../helpers/walkaround.ts";
import { until, WebhookReceiver } from "../helpers/webhook-receiver.ts";

/**
 * Review (contract, "Added on 2026-11-26"): when a report goes to a person, the review API that
 * confirms, rejects, changes and adds findings, and the events that tell of both, over real HTTP.
 */
const damaged = DAMAGED_CASES.map((c) => ({ angle: c.angle, bytes: readFileSync(join(DAMAGE_VALID, "images", c.file)) }));

const report = async (svc: TestService, key: string, id: string) => (await svc.api(key, `/v1/inspections/${id}/report`)).json();
const review = (svc: TestService, key: string, id: string, json: unknown, headers: Record<string, string> = {}) =>
  svc.api(key, `/v1/inspections/${id}/review`, { method: "POST", json, headers });

describe("review, without models", () => {
  let svc: TestService;
  let key: string;
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    svc = await startService();
    key = await svc.key("test");
    receiver = await new WebhookReceiver().start();
  });
  afterAll(async () => {
    await receiver.close();
    await svc.close();
  });

  it("asks for review when the VIN was not confirmed, and sends inspection.review_required with inspection.completed", async () => {
    const m = await create(svc, key, { notify_url: receiver.url });
    const done = await walkaround(svc, key, m, { confirmVin: false, photos: await freshPhotos() });
    expect(done).toMatchObject({ status: "completed", summary: { needs_review: true, grade: "none" } });
    const r = await report(svc, key, m.id);
    expect(r.review).toEqual({ status: "required", reasons: ["vin_unconfirmed"], reviewed_at: null, reviewed_by: null, note: null });
    const secret = await svc.secret("test");
    const events = await until(
      "both events",
      () => receiver.received.filter((x) => JSON.parse(x.body).data.id === m.id),
      (got) => got.length >= 5,
    );
    const verifier = new Webhook(secret);
    const types = events.map((e) => (verifier.verify(e.body, e.headers as Record<string, string>) as { type: string }).type);
    expect(types.sort()).toEqual([
      "inspection.completed",
      "inspection.created",
      "inspection.in_progress",
      "inspection.processing",
      "inspection.review_required",
    ]);
    const required = events.map((e) => JSON.parse(e.body)).find((e) => e.type === "inspection.review_required");
    expect(required.data.summary.needs_review).toBe(true);
  });

  it("asks for review when the inspection's policy is always, and not when it is off", async () => {
    const always = await create(svc, key, { review: "always" });
    await walkaround(svc, key, always, { photos: await freshPhotos() });
    expect((await report(svc, key, always.id)).review).toMatchObject({ status: "required", reasons: ["policy"] });
    const off = await create(svc, key, { review: "off" });
    const offDone = await walkaround(svc, key, off, { confirmVin: false, photos: await freshPhotos() });
    expect(offDone.summary.needs_review).toBe(false);
    expect((await report(svc, key, off.id)).review).toMatchObject({ status: "not_required", reasons: ["vin_unconfirmed"] });
    const plain = await create(svc, key);
    await walkaround(svc, key, plain, { photos: await freshPhotos() });
    expect((await report(svc, key, plain.id)).review).toMatchObject({ status: "not_required", reasons: [] });
  });

  it("asks for review when a photo with problems was kept", async () => {
    const photos = await freshPhotos();
    const dark = await sharp(photos[0]!).linear(0.08, 0).jpeg().toBuffer();
    const m = await create(svc, key);
    await walkaround(svc, key, m, { over: [{ angle: "front", bytes: dark }], photos });
    expect((await report(svc, key, m.id)).review).toMatchObject({ status: "required", reasons: ["photo_problems_kept"] });
  });

  it("refuses a bad review with the contract's errors, and one before completion with 409", async () => {
    const early = await create(svc, key);
    const notYet = await review(svc, key, early.id, {});
    expect(notYet.status).toBe(409);
    expect((await notYet.json()).error).toMatchObject({ code: "inspection_not_reviewable", type: "conflict_error" });

    const m = await create(svc, key);
    await walkaround(svc, key, m, { photos: await freshPhotos() });
    const other = await create(svc, key);
    await walkaround(svc, key, other, { photos: await freshPhotos() });
    const otherMedia = (await report(svc, key, other.id)).photos[0].media_id;
    const cases: [unknown, string][] = [
      [{ decisions: [{ finding: "fnd_nope", action: "reject" }] }, "decisions[0].finding"],
      [{ added: [{ media_id: otherMedia, type: "dent", severity: "minor", bbox: [0.1, 0.1, 0.2, 0.2] }] }, "added[0].media_id"],
    ];
    for (const [body, param] of cases) {
      const res = await review(svc, key, m.id, body);
      expect(res.status).toBe(400);
      expect((await res.json()).error).toMatchObject({ code: "parameter_invalid", param });
    }
    const media = (await report(svc, key, m.id)).photos[0].media_id;
    for (const body of [
      // A box with no width (one that runs past the photo's edge is clipped to it, not refused).
      { added: [{ media_id: media, type: "dent", severity: "minor", bbox: [0.9, 0.1, 0, 0.2] }] },
      { added: [{ media_id: media, type: "vin_mismatch", severity: "minor", bbox: [0.1, 0.1, 0.2, 0.2] }] },
      { decisions: [{ finding: "fnd_x", action: "change" }] },
      { decisions: [{ finding: "fnd_x", action: "reject", severity: "minor" }] },
      { note: "x".repeat(2001) },
      { verdict: "fine" },
    ]) {
      const res = await review(svc, key, m.id, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect((await res.json()).error.type).toBe("invalid_request_error");
    }
    // Another account sees no such inspection.
    const stranger = await svc.key("test", "globex");
    expect((await review(svc, stranger, m.id, {})).status).toBe(404);
    // Nothing refused was stored.
    expect((await report(svc, key, m.id)).review.status).toBe("not_required");
  });

  it(`takes at most ${MAX_REVIEWS} reviews of an inspection, then answers 409 and keeps the last`, async () => {
    const m = await create(svc, key);
    expect((await walkaround(svc, key, m)).status).toBe("completed");
    for (let n = 1; n <= MAX_REVIEWS; n++) {
      const res = await review(svc, key, m.id, { note: `review ${n}` });
      expect(res.status, await res.clone().text()).toBe(200);
    }
    const refused = await review(svc, key, m.id, { note: "one more" });
    expect(refused.status).toBe(409);
    expect((await refused.json()).error).toMatchObject({
      type: "conflict_error",
      code: "inspection_not_reviewable",
      message: expect.stringContaining(`reviewed ${MAX_REVIEWS} times`),
    });
    expect((await report(svc, key, m.id)).review.note).toBe(`review ${MAX_REVIEWS}`);
  }, 120_000);
});

describe("review, with the models", () => {
  let svc: TestService;
  let key: string;
  let receiver: WebhookReceiver;
  let m: Made;
  let modelReport: any;
  beforeAll(async () => {
    svc = await startService(withModels);
    key = await svc.key("test");
    receiver = await new WebhookReceiver().start();
    m = await create(svc, key, { notify_url: receiver.url, review: "always" });
    await walkaround(svc, key, m, { over: damaged });
    modelReport = await report(svc, key, m.id);
  }, 180_000);
  afterAll(async () => {
    await receiver.close();
    await svc.close();
  });

  it("rejects one finding and adds one: the grade from what stands, the rejected one listed, replays idempotent, events signed", async () => {
    expect(modelReport.findings.length).toBeGreaterThanOrEqual(2);
    expect(modelReport.findings.every((f: any) => f.source === "model" && f.review === null)).toBe(true);
    const severe = modelReport.findings.filter((f: any) => f.severity === "severe");
    const [kept, ...rest] = modelReport.findings;
    const clean = modelReport.photos.find((p: any) => p.angle === "left_rear" || p.angle === "right");
    const body = {
      decisions: [
        { finding: kept.id, action: "change", severity: "minor", part: "hood" },
        ...rest.map((f: any) => ({ finding: f.id, action: "reject" })),
      ],
      added: [{ media_id: clean.media_id, type: "scratch", part: "front_left_door", severity: "moderate", bbox: [0.2, 0.3, 0.25, 0.1] }],
      note: "Checked on the photos.",
    };
    const headers = { "idempotency-key": `review-${m.id}` };
    const res = await review(svc, key, m.id, body, headers);
    expect(res.status).toBe(200);
    const reviewed = await res.json();
    expect(severe.length === 0 || modelReport.grade !== reviewed.grade).toBe(true);
    // Left: the changed finding (minor) and the added scratch (moderate).
    expect(reviewed.grade).toBe("moderate");
    expect(reviewed.summary).toEqual({ findings: 2, grade: "moderate", needs_review: false, new_findings: null });
    expect(reviewed.findings).toHaveLength(modelReport.findings.length + 1);
    expect(reviewed.findings[0]).toMatchObject({ id: kept.id, severity: "minor", part: "hood", review: "changed", source: "model" });
    for (const f of reviewed.findings.slice(1, -1)) expect(f.review).toBe("rejected");
    const added = reviewed.findings.at(-1);
    expect(added).toMatchObject({ source: "reviewer", review: null, type: "scratch", media_id: clean.media_id, confidence: null });
    expect(added.id).toMatch(/^fnd_/);
    expect(reviewed.review).toMatchObject({
      status: "completed",
      reasons: expect.arrayContaining(["policy"]),
      note: "Checked on the photos.",
    });
    expect(reviewed.review.reviewed_by).toMatch(/^key_/);
    expect(await report(svc, key, m.id)).toEqual(reviewed);
    const inspection = await (await svc.api(key, `/v1/inspections/${m.id}`)).json();
    expect(inspection.summary).toEqual({ findings: 2, grade: "moderate", needs_review: false, new_findings: null });

    // A replay answers the same, and stores nothing more.
    const replay = await review(svc, key, m.id, body, headers);
    expect(replay.status).toBe(200);
    expect(await replay.json()).toEqual(reviewed);

    // A later review replaces it: the model's findings as they were, none added.
    const second = await (await review(svc, key, m.id, { decisions: [{ finding: kept.id, action: "confirm" }] })).json();
    expect(second.findings).toHaveLength(modelReport.findings.length);
    expect(second.findings[0].review).toBe("confirmed");
    expect(second.grade).toBe(modelReport.grade);

    const secret = await svc.secret("test");
    const verifier = new Webhook(secret);
    const reviewedEvents = await until(
      "two inspection.reviewed events",
      () => receiver.received.map((x) => ({ x, e: JSON.parse(x.body) })).filter(({ e }) => e.type === "inspection.reviewed"),
      (got) => got.length === 2,
    );
    for (const { x } of reviewedEvents) verifier.verify(x.body, x.headers as Record<string, string>);
    // Both are in the event list too, newest first. Deliveries may arrive in either order (as
    // Stripe's may), so each delivered event is put in its place in the list.
    const listed = await (await svc.api(key, "/v1/events?limit=100")).json();
    const inList = listed.data.filter((e: any) => e.type === "inspection.reviewed" && e.data.id === m.id);
    expect(inList).toHaveLength(2);
    const [first, later] = inList.reverse().map((l: any) => reviewedEvents.find(({ e }) => e.id === l.id)!.e);
    expect(first.data.summary).toEqual({ findings: 2, grade: "moderate", needs_review: false, new_findings: null });
    expect(first.review).toMatchObject({
      reviewed_by: reviewed.review.reviewed_by,
      note: "Checked on the photos.",
      decisions: body.decisions,
    });
    expect(first.review.added[0]).toMatchObject({ id: added.id, type: "scratch" });
    expect(later.data.summary.grade).toBe(modelReport.grade);
  });

  it("asks for review when damage is only suspected, and when a typed finding is unsure", async () => {
    // car-damage-severity 0114: a damaged car the whole-photo judgement is sure of (1.00) with no
    // box of a type on it and no broken part; 0034: one scratch at 0.40, below the review threshold (0.5).
    const cases = [
      { prefix: "0114", reason: "damage_suspected", finding: (f: any) => f.type === "damage_suspected" },
      { prefix: "0034", reason: "low_confidence", finding: (f: any) => f.type !== "damage_suspected" && f.confidence < 0.5 },
    ];
    for (const c of cases) {
      const made = await create(svc, key);
      await walkaround(svc, key, made, { over: [{ angle: "front", bytes: severityPhoto(c.prefix) }] });
      const r = await report(svc, key, made.id);
      const front = r.photos.find((p: any) => p.angle === "front").media_id;
      expect(r.findings.filter((f: any) => f.media_id === front).some(c.finding), JSON.stringify(r.findings)).toBe(true);
      expect(r.review.status, c.prefix).toBe("required");
      expect(r.review.reasons).toContain(c.reason);
      expect(r.summary.needs_review).toBe(true);
    }
  }, 120_000);
});
