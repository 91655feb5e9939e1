import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXTERIOR_ANGLES, REQUIRED_ANGLES } from "../../core/schemas/capture.ts";
import { carPhotos, heicOf } from "../helpers/photos.ts";
import { startService, OTHER_VALID_VIN, VALID_VIN, type TestService } from "../helpers/service.ts";
import { confirmVin, create, photograph, submitAndWait } from "../helpers/walkaround.ts";
import { until } from "../helpers/webhook-receiver.ts";

let svc: TestService;
let key: string;
const photos = carPhotos(10);

beforeAll(async () => {
  svc = await startService();
  key = await svc.key("test");
});
afterAll(() => svc.close());

const capture = (token: string, path = "", init: RequestInit = {}) => fetch(`${svc.url}/capture/v1/${token}${path}`, init);
const upload = (token: string, angle: string, bytes: Buffer, type = "image/jpeg") =>
  capture(token, `/photos/${angle}`, { method: "PUT", body: bytes, headers: { "content-type": type } });

describe("capture API", () => {
  it("walks a real inspection from link to report: photos, VIN, submit, completed", async () => {
    const { id, token } = await create(svc, key, { reference: "walk" });
    const session = await (await capture(token)).json();
    expect(session.status).toBe("in_progress");
    expect(session.steps.map((s: any) => s.angle)).toEqual([...EXTERIOR_ANGLES, "vin", "odometer"]);
    expect(session.steps.filter((s: any) => s.required).length).toBe(9);
    expect((await (await svc.api(key, `/v1/inspections/${id}`)).json()).status).toBe("in_progress");

    const incomplete = await capture(token, "/submit", { method: "POST" });
    expect(incomplete.status).toBe(409);
    const err = await incomplete.json();
    expect(err.error.code).toBe("capture_incomplete");
    expect(err.error.message).toContain("front_left");

    const angles = REQUIRED_ANGLES;
    for (const [i, angle] of angles.entries()) {
      const res = await upload(token, angle, photos[i]!);
      expect(res.status, angle).toBe(200);
      const body = await res.json();
      expect(body).toMatchObject({ angle, quality: { passed: true, problems: [] } });
      expect(body.media_id).toMatch(/^med_/);
    }
    const vin = await capture(token, "/vin", {
      method: "POST",
      body: JSON.stringify({ vin: VALID_VIN.toLowerCase() }),
      headers: { "content-type": "application/json" },
    });
    expect(await vin.json()).toEqual({ vin: VALID_VIN, valid: true, matches_vehicle: true, make: "Honda", model: "Accord", year: 2003 });

    const submitted = await capture(token, "/submit", { method: "POST" });
    expect(submitted.status).toBe(202);
    expect(await submitted.json()).toEqual({ status: "processing" });

    const done = await until(
      "completed",
      async () => (await svc.api(key, `/v1/inspections/${id}`)).json(),
      (i: any) => i.status === "completed",
    );
    expect(done.summary).toEqual({ findings: 0, grade: "none", needs_review: false, new_findings: null });
    expect(done.report_url).toBe(`${svc.url}/v1/inspections/${id}/report`);
    expect(done.submitted_at).toMatch(/Z$/);
    const report = await (await svc.api(key, `/v1/inspections/${id}/report`)).json();
    expect(report).toMatchObject({ object: "report", inspection_id: id, grade: "none", findings: [], model: null });
    expect(report.vehicle).toMatchObject({ vin: VALID_VIN, vin_confirmed: true, vin_observed: VALID_VIN });
    expect(report.photos.map((p: any) => p.angle).sort()).toEqual([...angles].sort());

    // The photo is served back as a JPEG with caching headers, scoped like everything else.
    const media = await svc.api(key, new URL(report.photos[0].url).pathname);
    expect(media.status).toBe(200);
    expect(media.headers.get("content-type")).toBe("image/jpeg");
    expect(media.headers.get("cache-control")).toBe("private, max-age=3600");
    const bytes = Buffer.from(await media.arrayBuffer());
    expect(Number(media.headers.get("content-length"))).toBe(bytes.length);
    expect((await sharp(bytes).metadata()).format).toBe("jpeg");
    const etag = media.headers.get("etag")!;
    const cached = await svc.api(key, new URL(report.photos[0].url).pathname, { headers: { "if-none-match": etag } });
    expect(cached.status).toBe(304);
    expect((await svc.api(await svc.key("test", "stranger"), new URL(report.photos[0].url).pathname)).status).toBe(404);

    // Once submitted, the link is inactive.
    const after = await capture(token);
    expect(after.status).toBe(410);
    expect((await after.json()).error.code).toBe("capture_link_inactive");
  });

  it("flags a VIN that differs from the one on file as a vin_mismatch finding", async () => {
    const inspection = await create(svc, key);
    await photograph(inspection, { open: true });
    const vin = await confirmVin(inspection, OTHER_VALID_VIN);
    expect(vin).toMatchObject({ valid: true, matches_vehicle: false, make: "Tesla" });
    await submitAndWait(svc, key, inspection);
    const report = await (await svc.api(key, `/v1/inspections/${inspection.id}/report`)).json();
    expect(report.findings).toHaveLength(1);
    expect(report.findings[0]).toMatchObject({ object: "finding", type: "vin_mismatch", severity: "moderate" });
    expect(report.findings[0].id).toMatch(/^fnd_/);
    expect(report.grade).toBe("moderate");
    expect(report.vehicle).toMatchObject({ vin_confirmed: false, vin_observed: OTHER_VALID_VIN });
  });

  it("decodes a VIN without recording it, for the customer to check", async () => {
    const { token } = await create(svc, key);
    const res = await capture(token, `/vin?vin=${OTHER_VALID_VIN.toLowerCase()}`);
    expect(await res.json()).toEqual({
      vin: OTHER_VALID_VIN,
      valid: true,
      matches_vehicle: false,
      make: "Tesla",
      model: "Model 3",
      year: 2019,
    });
    expect((await (await capture(token)).json()).vin_confirmed).toBeNull();
    expect((await capture(token, "/vin?vin=nope")).status).toBe(400);
  });

  it("an invalid VIN is 400 with param vin", async () => {
    const { token } = await create(svc, key);
    const res = await capture(token, "/vin", {
      method: "POST",
      body: JSON.stringify({ vin: "1HGCM82643A004352" }),
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatchObject({ code: "parameter_invalid", param: "vin" });
  });

  it("re-encodes to JPEG and strips EXIF, GPS included; a retake replaces the photo", async () => {
    const { token } = await create(svc, key);
    const withGps = await sharp(photos[0]!)
      .withExif({
        IFD0: { Make: "PhoneCo", Model: "X" },
        IFD3: { GPSLatitudeRef: "N", GPSLatitude: "51/1 30/1 0/1", GPSLongitudeRef: "W", GPSLongitude: "0/1 7/1 0/1" },
      })
      .png()
      .toBuffer();
    expect((await sharp(withGps).metadata()).exif).toBeDefined();
    const first = await (await upload(token, "front", withGps, "image/png")).json();
    const retake = await (await upload(token, "front", photos[1]!)).json();
    expect(retake.media_id).not.toBe(first.media_id);
    const session = await (await capture(token)).json();
    expect(session.steps.find((s: any) => s.angle === "front").done).toBe(true);
    // The stored photo is what the API serves: JPEG, no EXIF.
    const { readFileSync } = await import("node:fs");
    const { photoBlobKey } = await import("../../core/domain/blob-keys.ts");
    const stored = readFileSync(svc.blobPath(photoBlobKey(session.inspection_id, retake.media_id)));
    const meta = await sharp(stored).metadata();
    expect(meta.format).toBe("jpeg");
    expect(meta.exif).toBeUndefined();
    const firstGone = await svc.api(key, `/v1/media/${first.media_id}/full.jpg`);
    expect(firstGone.status).toBe(404);
  });

  it("keeps but flags a dark or blurred photo, with its problems", async () => {
    const { token } = await create(svc, key);
    const dark = await sharp(photos[2]!).linear(0.15, 0).jpeg().toBuffer();
    const blurry = await sharp(photos[3]!).blur(12).jpeg().toBuffer();
    const d = await (await upload(token, "left", dark)).json();
    expect(d.quality).toMatchObject({ passed: false });
    expect(d.quality.problems).toContain("too_dark");
    const b = await (await upload(token, "right", blurry)).json();
    expect(b.quality.problems).toContain("blurry");
    const session = await (await capture(token)).json();
    expect(session.steps.find((s: any) => s.angle === "left")).toMatchObject({ done: true, quality: { passed: false } });
  });

  it("takes HEIC, what iPhones send, and stores it as the same picture in JPEG; a HEIC bomb is 413, a broken one 400", async () => {
    const { token } = await create(svc, key);
    const heic = await heicOf(photos[0]!);
    expect(heic.toString("latin1", 4, 12)).toBe("ftypheic");
    const res = await upload(token, "front", heic, "image/heic");
    expect(res.status).toBe(200);
    const body = await res.json();
    const original = await sharp(photos[0]!).metadata();
    expect(body).toMatchObject({ angle: "front", width: original.width, height: original.height });
    const stored = Buffer.from(await (await svc.api(key, `/v1/media/${body.media_id}/full.jpg`)).arrayBuffer());
    expect((await sharp(stored).metadata()).format).toBe("jpeg");
    // The same picture: small mean difference from the photo it was made from, large from another.
    const grey = (image: Buffer) => sharp(image).resize(64, 64, { fit: "fill" }).greyscale().raw().toBuffer();
    const meanDiff = (a: Buffer, b: Buffer) => a.reduce((sum, v, i) => sum + Math.abs(v - b[i]!), 0) / a.length;
    const [ours, source, other] = await Promise.all([grey(stored), grey(photos[0]!), grey(photos[1]!)]);
    expect(meanDiff(ours, source)).toBeLessThan(6);
    expect(meanDiff(ours, other)).toBeGreaterThan(20);

    const bomb = await heicOf(
      await sharp({ create: { width: 8000, height: 6000, channels: 3, background: "#808080" } })
        .png()
        .toBuffer(),
    );
    expect(bomb.length).toBeLessThan(1024 * 1024);
    const tooBig = await upload(token, "left", bomb, "image/heic");
    expect(tooBig.status).toBe(413);
    expect((await tooBig.json()).error).toMatchObject({ code: "body_too_large", message: expect.stringMatching(/megapixels/) });

    const broken = await upload(token, "left", Buffer.concat([heic.subarray(0, 400), Buffer.alloc(2000, 7)]), "image/heic");
    expect(broken.status).toBe(400);
    expect((await broken.json()).error).toMatchObject({ code: "parameter_invalid", param: "photo" });
  });

  it("refuses undecodable photos, wrong types, oversized bodies and decompression bombs", async () => {
    const { token } = await create(svc, key);
    let res = await upload(token, "front", Buffer.from("not an image at all"));
    expect(res.status).toBe(415);
    expect((await res.json()).error).toMatchObject({ code: "unsupported_media_type", param: "photo" });

    // A JPEG by its first bytes whose data is broken: it is what it claims, and cannot be decoded.
    res = await upload(token, "front", Buffer.concat([photos[0]!.subarray(0, 600), Buffer.alloc(4000, 7)]));
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatchObject({ code: "parameter_invalid", param: "photo" });

    res = await upload(token, "front", photos[0]!, "image/gif");
    expect(res.status).toBe(415);
    expect((await res.json()).error.code).toBe("unsupported_media_type");

    res = await upload(token, "front", Buffer.alloc(16 * 1024 * 1024, 1));
    expect(res.status).toBe(413);
    expect((await res.json()).error.code).toBe("body_too_large");

    // 8000 × 6000 = 48 megapixels in a few hundred kilobytes.
    const bomb = await sharp({ create: { width: 8000, height: 6000, channels: 3, background: "#808080" } })
      .png({ compressionLevel: 9 })
      .toBuffer();
    expect(bomb.length).toBeLessThan(15 * 1024 * 1024);
    res = await upload(token, "front", bomb, "image/png");
    expect(res.status).toBe(413);
    expect((await res.json()).error.message).toMatch(/megapixels/);

    res = await upload(token, "roof", photos[0]!);
    expect(res.status).toBe(400);
    expect((await res.json()).error.param).toBe("angle");
  });

  it("an unknown token is 404; a canceled or expired inspection's link is 410", async () => {
    expect((await capture("A".repeat(43))).status).toBe(404);
    const { id, token } = await create(svc, key);
    await svc.api(key, `/v1/inspections/${id}/cancel`, { method: "POST" });
    const res = await upload(token, "front", photos[0]!);
    expect(res.status).toBe(410);
    expect((await res.json()).error.code).toBe("capture_link_inactive");
  });
});

describe("expiry", () => {
  it("sweeps inspections past expires_at to expired, with an event, and closes the link", async () => {
    const short = await startService({ INSPECTION_TTL_HOURS: String(1.5 / 3600) });
    try {
      const k = await short.key("test");
      const { id, token } = await create(short, k);
      expect((await fetch(`${short.url}/capture/v1/${token}`)).status).toBe(200);
      const expired = await until(
        "expired",
        async () => (await short.api(k, `/v1/inspections/${id}`)).json(),
        (i: any) => i.status === "expired",
        10_000,
      );
      expect(expired.capture_url).toBeNull();
      expect((await fetch(`${short.url}/capture/v1/${token}`)).status).toBe(410);
      const events = await (await short.api(k, "/v1/events")).json();
      expect(events.data.map((e: any) => e.type)).toEqual(["inspection.expired", "inspection.in_progress", "inspection.created"]);
      const cancel = await short.api(k, `/v1/inspections/${id}/cancel`, { method: "POST" });
      expect(cancel.status).toBe(409);
      expect((await cancel.json()).error.code).toBe("inspection_not_cancelable");
    } finally {
      await short.close();
    }
  });
});
