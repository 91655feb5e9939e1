import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { modelInputBlobKey } from "../../core/domain/blob-keys.ts";
import { VEHICLE_PARTS } from "../../core/domain/closeups.ts";
import { modelInputSizes } from "../../inference/detection/model-input.ts";
import { REQUIRED_ANGLES } from "../../core/schemas/capture.ts";
import { carPhotos, DATASETS } from "../helpers/photos.ts";
import { startService, withModels, type TestService } from "../helpers/service.ts";
import { create, photograph, submitAndWait, walkaround } from "../helpers/walkaround.ts";
import { until } from "../helpers/webhook-receiver.ts";

/**
 * Close-ups (contract, "Added on 2026-11-26"): PUT /capture/v1/<token>/closeups/<n>?part=…, stored
 * and reported as photos of the angle `closeup`, optional, never blocking submit; and the close-ups
 * an exterior photo's upload suggests, from the whole-photo judgement and the parts model.
 */
const photos = carPhotos(10);

const put = (base: string, path: string, bytes: Buffer) =>
  fetch(`${base}${path}`, { method: "PUT", body: bytes, headers: { "content-type": "image/jpeg" } });

describe("close-ups, without models", () => {
  let svc: TestService;
  let key: string;
  beforeAll(async () => {
    svc = await startService();
    key = await svc.key("test");
  });
  afterAll(() => svc.close());

  it("takes close-ups 1 to 8 with or without a part, answers as a photo, and a retake of a slot replaces it", async () => {
    const { base } = await create(svc, key);
    const hood = await put(base, "/closeups/1?part=hood", photos[0]!);
    expect(hood.status).toBe(200);
    const first = await hood.json();
    expect(first).toMatchObject({ angle: "closeup", part: "hood", quality: { passed: true }, suggested_closeups: [] });
    expect(first.media_id).toMatch(/^med_/);
    const unnamed = await (await put(base, "/closeups/8", photos[1]!)).json();
    expect(unnamed).toMatchObject({ angle: "closeup", part: null });
    // An exterior photo's answer names no part; without the judgement model it suggests nothing.
    expect(await (await put(base, "/photos/front", photos[2]!)).json()).toMatchObject({
      angle: "front",
      part: null,
      suggested_closeups: [],
    });

    const retake = await (await put(base, "/closeups/1?part=front_bumper", photos[3]!)).json();
    expect(retake).toMatchObject({ angle: "closeup", part: "front_bumper" });
    expect((await svc.api(key, `/v1/media/${first.media_id}/full.jpg`)).status).toBe(404);
    expect((await svc.api(key, `/v1/media/${retake.media_id}/full.jpg`)).status).toBe(200);

    const session = await (await fetch(base)).json();
    expect(session.closeups).toEqual([
      { n: 1, part: "front_bumper", media_id: retake.media_id, quality: retake.quality },
      { n: 8, part: null, media_id: unnamed.media_id, quality: unnamed.quality },
    ]);
    // Close-ups are no step of the walkaround.
    expect(session.steps.filter((s: any) => s.done).map((s: any) => s.angle)).toEqual(["front"]);
  });

  it.each([
    ["/closeups/0?part=hood", "n"],
    ["/closeups/9?part=hood", "n"],
    ["/closeups/1e0", "n"],
    ["/closeups/x", "n"],
    ["/closeups/1?part=roof", "part"],
    ["/closeups/1?part=", "part"],
  ])("refuses %s with 400 and param %s", async (path, param) => {
    const { base } = await create(svc, key);
    const res = await put(base, path, photos[0]!);
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error).toMatchObject({ type: "invalid_request_error", code: "parameter_invalid", param });
    expect(body.error.request_id).toMatch(/^req_/);
    expect((await (await fetch(base)).json()).closeups).toEqual([]);
  });

  it("refuses a malformed close-up with 400 whatever its link's state: a canceled inspection's link answers 410 only to a well-formed one", async () => {
    const { id, base } = await create(svc, key);
    expect((await svc.api(key, `/v1/inspections/${id}/cancel`, { method: "POST" })).status).toBe(200);
    const badPart = await put(base, "/closeups/5?part=%0B", photos[0]!);
    expect(badPart.status).toBe(400);
    expect((await badPart.json()).error).toMatchObject({ code: "parameter_invalid", param: "part" });
    const badSlot = await put(base, "/closeups/0?part=hood", photos[0]!);
    expect(badSlot.status).toBe(400);
    const wellFormed = await put(base, "/closeups/5?part=hood", photos[0]!);
    expect(wellFormed.status).toBe(410);
    expect((await wellFormed.json()).error.code).toBe("capture_link_inactive");
  });

  it("refuses an unknown query parameter, and checks the body as a photo upload does", async () => {
    const { base } = await create(svc, key);
    const unknown = await put(base, "/closeups/2?side=left", photos[0]!);
    expect(unknown.status).toBe(400);
    expect((await unknown.json()).error).toMatchObject({ code: "parameter_unknown", param: "side" });
    const notAPhoto = await put(base, "/closeups/2", Buffer.from("not an image at all"));
    expect(notAPhoto.status).toBe(415);
    const gif = await fetch(`${base}/closeups/2`, { method: "PUT", body: photos[0]!, headers: { "content-type": "image/gif" } });
    expect(gif.status).toBe(415);
    const tooBig = await put(base, "/closeups/2", Buffer.alloc(16 * 1024 * 1024, 1));
    expect(tooBig.status).toBe(413);
  });

  it("submits without close-ups; a close-up is in the report's photos with angle closeup and its part", async () => {
    const without = await create(svc, key);
    expect((await walkaround(svc, key, without, { confirmVin: false })).status).toBe("completed");

    const made = await create(svc, key);
    const { id, base } = made;
    const { "closeup-3": closeup } = await photograph(made, { closeups: [{ n: 3, part: "left_mirror", bytes: photos[9]! }] });
    expect((await submitAndWait(svc, key, made)).status).toBe("completed");
    const report = await (await svc.api(key, `/v1/inspections/${id}/report`)).json();
    expect(report.photos).toHaveLength(REQUIRED_ANGLES.length + 1);
    expect(report.photos.find((p: any) => p.media_id === closeup.media_id)).toMatchObject({ angle: "closeup", part: "left_mirror" });
    expect(report.photos.filter((p: any) => p.angle !== "closeup").every((p: any) => p.part === null)).toBe(true);
    // Once submitted, close-ups are refused like any photo.
    expect((await put(base, "/closeups/4", photos[0]!)).status).toBe(410);
  });

  it("is in the OpenAPI document with the photo body, the slot and the part", async () => {
    const doc = await (await fetch(`${svc.url}/v1/openapi.json`)).json();
    const op = doc.paths["/capture/v1/{token}/closeups/{n}"].put;
    expect(op.operationId).toBe("captureCloseup");
    expect(Object.keys(op.requestBody.content)).toContain("image/jpeg");
    expect(op.parameters.find((p: any) => p.name === "part").schema.enum).toEqual([...VEHICLE_PARTS]);
    const result = op.responses["200"].content["application/json"].schema;
    expect(result.properties.suggested_closeups.items.properties.part.enum).toEqual([...VEHICLE_PARTS]);
    expect(
      doc.paths["/capture/v1/{token}/photos/{angle}"].put.responses["200"].content["application/json"].schema.properties,
    ).toHaveProperty("suggested_closeups");
  });
});

/** Real whole cars from car-damage-severity, damaged (the judgement model is sure), and clean car-parts photos. */
const DAMAGED = join(DATASETS, "car-damage-severity/images/0423_JPEG_jpg.rf.990728d1ae8076ceb1757beef9374cd5.jpg");

describe("close-ups, with the models", () => {
  let svc: TestService;
  let key: string;
  beforeAll(async () => {
    svc = await startService(withModels);
    key = await svc.key("test");
  });
  afterAll(() => svc.close());

  it("an exterior photo the judgement calls damaged suggests close-ups of parts; a clean one none", async () => {
    const { base } = await create(svc, key);
    const damaged = await (await put(base, "/photos/rear_right", readFileSync(DAMAGED))).json();
    expect(damaged.suggested_closeups.length).toBeGreaterThan(0);
    expect(damaged.suggested_closeups.length).toBeLessThanOrEqual(2);
    for (const s of damaged.suggested_closeups) {
      expect(VEHICLE_PARTS).toContain(s.part);
      expect(s.reason).toBe("damage_suspected");
    }
    expect((await (await put(base, "/photos/front", photos[1]!)).json()).suggested_closeups).toEqual([]);
    // Not for close-ups, nor for the VIN.
    expect((await (await put(base, "/closeups/1", readFileSync(DAMAGED))).json()).suggested_closeups).toEqual([]);
    expect((await (await put(base, "/photos/vin", readFileSync(DAMAGED))).json()).suggested_closeups).toEqual([]);
  });

  it("stores a close-up's model inputs on upload, processing takes it with its part, and they are deleted once settled", async () => {
    const made = await create(svc, key);
    const { id } = made;
    const { "closeup-1": closeup } = await photograph(made, { closeups: [{ n: 1, part: "hood", bytes: readFileSync(DAMAGED) }] });
    const sizes = modelInputSizes(svc.config.models);
    expect(sizes).toHaveLength(3); // damage, parts, judgement
    const inputs = sizes.map((size) => svc.blobPath(modelInputBlobKey(id, closeup.media_id, size)));
    for (const path of inputs) expect(existsSync(path), path).toBe(true);
    expect((await submitAndWait(svc, key, made)).status).toBe("completed");
    const report = await (await svc.api(key, `/v1/inspections/${id}/report`)).json();
    expect(report.photos.find((p: any) => p.media_id === closeup.media_id)).toMatchObject({ angle: "closeup", part: "hood" });
    await until(
      "model inputs deleted",
      async () => inputs.filter((path) => existsSync(path)),
      (left) => left.length === 0,
    );
  }, 120_000);
});
