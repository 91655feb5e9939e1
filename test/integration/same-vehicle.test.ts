import { readFileSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXTERIOR_ANGLES } from "../../core/schemas/capture.ts";
import { DATASETS } from "../helpers/photos.ts";
import { startService, type TestService, withModels } from "../helpers/service.ts";
import { create, walkaround } from "../helpers/walkaround.ts";

/**
 * One vehicle (issue 32): the exterior photos of an inspection, and of its baseline, show one
 * vehicle, told by its paint as the upload reads it; a photo of another car is named and the report
 * goes to review (vehicle_inconsistent). The datasets hold one photo per car, so one car's walkaround
 * is its photo under other light, mirrored and cut closer.
 */
const carPhoto = (name: string) => readFileSync(join(DATASETS, "car-parts/testset/JPEGImages", name));
const WHITE_CAR = "te19.jpg"; // a white sedan (paint L 96)
const BLACK_CAR = "te31.jpg"; // a black SUV (L 24); te10, a black sedan whose hood mirrors the sky (L 99 against doors of L 11), is mostly left unread (vehicle-paint.ts)

/** Nine photos of one car (the eight angles and the VIN's), as other light and a step closer give them. */
async function oneCar(name: string): Promise<Buffer[]> {
  const bytes = carPhoto(name);
  const { width = 0, height = 0 } = await sharp(bytes).metadata();
  const variants = [
    sharp(bytes),
    sharp(bytes).flop(),
    sharp(bytes).modulate({ brightness: 0.8 }),
    sharp(bytes).modulate({ brightness: 1.15 }),
    sharp(bytes).extract({
      left: Math.round(width / 10),
      top: Math.round(height / 10),
      width: Math.round(width * 0.8),
      height: Math.round(height * 0.8),
    }),
    sharp(bytes).flop().modulate({ brightness: 0.9 }),
    sharp(bytes).resize(Math.round(width / 2)),
    sharp(bytes).modulate({ brightness: 1.05, saturation: 0.9 }),
    sharp(bytes).resize(Math.round(width * 0.7)),
  ];
  return Promise.all(variants.map((v) => v.jpeg({ quality: 85 }).toBuffer()));
}

describe("integrity: one vehicle", () => {
  let svc: TestService;
  let key: string;
  beforeAll(async () => {
    svc = await startService(withModels);
    key = await svc.key("test");
  }, 120_000);
  afterAll(() => svc.close());

  const report = async (id: string) => (await svc.api(key, `/v1/inspections/${id}/report`)).json();

  it("names the photo of another car in a walkaround, and a return of another car than its baseline's; both go to review", async () => {
    const white = await oneCar(WHITE_CAR);
    const black = await oneCar(BLACK_CAR);

    // A walkaround of the white car with the black one as its left side.
    const mixed = await create(svc, key);
    await walkaround(svc, key, mixed, { photos: white, over: [{ angle: "left", bytes: black[2]! }] });
    const m = await report(mixed.id);
    const left = m.photos.find((p: any) => p.angle === "left").media_id;
    expect(m.integrity.same_vehicle).toBe("inconsistent");
    expect(m.integrity.inconsistent_photos).toEqual([left]);
    expect(m.review.status).toBe("required");
    expect(m.review.reasons).toContain("vehicle_inconsistent");

    // The white car alone, under other light: one vehicle. It is the baseline of the next two.
    const pickUp = await create(svc, key);
    await walkaround(svc, key, pickUp, { photos: white });
    const p = await report(pickUp.id);
    expect(p.integrity).toMatchObject({ same_vehicle: "consistent", inconsistent_photos: [] });
    expect(p.review.reasons).not.toContain("vehicle_inconsistent");

    // Returned: the black car. Every exterior photo is another vehicle than the baseline's.
    const swapped = await create(svc, key, { baseline_inspection: pickUp.id });
    await walkaround(svc, key, swapped, { photos: black });
    const s = await report(swapped.id);
    const exterior = s.photos.filter((x: any) => (EXTERIOR_ANGLES as readonly string[]).includes(x.angle)).map((x: any) => x.media_id);
    expect(s.integrity.same_vehicle).toBe("inconsistent");
    expect([...s.integrity.inconsistent_photos].sort()).toEqual([...exterior].sort());
    expect(s.review.reasons).toContain("vehicle_inconsistent");
  }, 240_000);
});
