import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { DEFAULT_MODELS } from "../../core/config.ts";
import { EXTERIOR_ANGLES } from "../../core/schemas/capture.ts";
import { readYoloFolder } from "../../inference/evaluation/yolo-folder.ts";
import { carPhotos, DATASETS } from "../helpers/photos.ts";
import { startService, VALID_VIN, withModels } from "../helpers/service.ts";
import { until } from "../helpers/webhook-receiver.ts";

/**
 * Real damaged-car photos from car-damage/valid (never trained on), each with one labelled damage
 * that the shipped model finds; they go through the capture API like a customer's photos.
 */
const VALID = join(DATASETS, "car-damage/valid");
const CASES = [
  { angle: "front", file: "000314_jpg.rf.6514763b42e3ef194ced547bc7176592.jpg", type: "glass_shatter" },
  { angle: "rear_right", file: "001078_jpg.rf.e1f47a21d8b6ec3c11540eddd018192a.jpg", type: "tire_flat" },
  { angle: "left", file: "001377_jpg.rf.dbb81e538b394cd479194e26e826956b.jpg", type: "glass_shatter" },
  // A close-up of a shattered windscreen, on which the parts model finds no part at all: the
  // damage model's sure glass shatter (0.88) vouches that it shows a vehicle.
  { angle: "rear", file: "000215_jpg.rf.7574499536dce9bf8e883ac0998ea3f8.jpg", type: "glass_shatter" },
];

describe.skipIf(!existsSync(DEFAULT_MODELS.damage))("damage detection end to end", () => {
  it("reports findings of the right type on the right photo, with a severity and an evidence photo", async () => {
    const svc = await startService(withModels);
    try {
      const key = svc.key();
      const made = await (await svc.api(key, "/v1/inspections", { method: "POST", json: { vehicle: { vin: VALID_VIN } } })).json();
      const base = made.capture_url.replace("/c/", "/capture/v1/");
      await fetch(base);
      const fill = carPhotos(9);
      const media: Record<string, string> = {};
      for (const [i, angle] of [...EXTERIOR_ANGLES, "vin"].entries()) {
        const damaged = CASES.find((c) => c.angle === angle);
        const body = damaged ? readFileSync(join(VALID, "images", damaged.file)) : fill[i]!;
        media[angle] = (await (await fetch(`${base}/photos/${angle}`, { method: "PUT", body, headers: { "content-type": "image/jpeg" } })).json()).media_id;
      }
      expect((await fetch(`${base}/submit`, { method: "POST" })).status).toBe(202);
      const done = await until("completed", async () => (await svc.api(key, `/v1/inspections/${made.id}`)).json(), (i: any) => i.status !== "processing", 60_000);
      expect(done.status).toBe("completed");
      const report = await (await svc.api(key, `/v1/inspections/${made.id}/report`)).json();
      expect(report.model.name).toMatch(/car damage/);
      const labels = new Map(readYoloFolder(VALID).map((l) => [l.image.split("/").pop(), l.boxes]));

      for (const c of CASES) {
        const found = report.findings.filter((f: any) => f.media_id === media[c.angle] && f.type === c.type);
        expect(found.length, `${c.type} on the ${c.angle} photo`).toBeGreaterThan(0);
        const f = found[0];
        expect(f.id).toMatch(/^fnd_/);
        expect(["minor", "moderate", "severe"]).toContain(f.severity);
        expect(f.confidence).toBeGreaterThan(0.25);
        // The box is where the label says the damage is.
        const [x, y, w, h] = f.bbox;
        const g = labels.get(c.file)![0]!;
        const ix = Math.max(0, Math.min(x + w, g.x2) - Math.max(x, g.x1));
        const iy = Math.max(0, Math.min(y + h, g.y2) - Math.max(y, g.y1));
        const iou = (ix * iy) / (w * h + (g.x2 - g.x1) * (g.y2 - g.y1) - ix * iy);
        expect(iou).toBeGreaterThan(0.4);
        // The evidence photo is served, is a JPEG of the photo's size, and differs from the photo.
        const evidence = await svc.api(key, new URL(f.evidence_url).pathname);
        expect(evidence.status).toBe(200);
        const bytes = Buffer.from(await evidence.arrayBuffer());
        const meta = await sharp(bytes).metadata();
        const photo = report.photos.find((p: any) => p.media_id === media[c.angle]);
        expect([meta.format, meta.width, meta.height]).toEqual(["jpeg", photo.width, photo.height]);
      }
      expect(report.summary.findings).toBe(report.findings.length);
      expect(report.grade).not.toBe("none");
      // Tire flat is severe whatever its size: the grade is at least that.
      expect(report.grade).toBe("severe");
    } finally {
      await svc.close();
    }
  }, 120_000);
});
