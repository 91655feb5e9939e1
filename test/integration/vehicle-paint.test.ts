import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type Paint, sameVehicle } from "../../core/domain/same-vehicle.ts";
import { DEFAULT_MODELS } from "../../core/runtime/config.ts";
import { UploadChecker } from "../../inference/quality/upload-checker.ts";
import { DATASETS } from "../helpers/photos.ts";

/**
 * A photo's paint as the upload reads it (inference/quality/vehicle-paint.ts), on real cars
 * photographed from several sides (car-parts training photos, as `npm run eval:same-vehicle` takes
 * them): a photo whose panels could not be one paint is left unread, and the car's other photos are
 * not called another vehicle by it.
 */
const photo = (k: number) => readFileSync(join(DATASETS, `car-parts/trainingset/JPEGImages/train${k}.jpg`));

describe.skipIf(!existsSync(DEFAULT_MODELS.parts))("a photo's paint, on real cars from several sides", () => {
  const checker = new UploadChecker(
    { partsModel: DEFAULT_MODELS.parts, judgeModel: null },
    {
      onError: (error) => {
        throw error;
      },
    },
  );
  afterAll(() => checker.close());
  const paints = (ks: number[]) => Promise.all(ks.map(async (k) => (await checker.check("front", photo(k))).paint));
  const judged = (ps: (Paint | null | undefined)[]) =>
    sameVehicle(ps.map((paint, i) => ({ mediaId: `p${i}`, paint: paint ?? null, baseline: false })));

  it("leaves unread the front of a silver sedan in a dim garage, whose hood mirrors the ceiling's lights and doors the dark", async () => {
    // Rear, front, front left (train249–251). The front left's hood reads about L 80 and its doors
    // L 17 to 20: their median, L 31, was taken for its paint, 43 from the front's L 74, and the
    // car was called inconsistent.
    const [rear, front, frontLeft] = await paints([249, 250, 251]);
    expect(rear![0]).toBeGreaterThan(50);
    expect(front![0]).toBeGreaterThan(50);
    expect(judged([rear, front, frontLeft])).toEqual({ same_vehicle: "consistent", inconsistent_photos: [] });
    expect(frontLeft).toBeNull();
  });

  it("leaves unread a red-and-black two-tone's photos that show both colours, and still reads a black car", async () => {
    // The pickup's front right and rear right (train193, 194): red doors beside black ones.
    expect(await paints([193, 194])).toEqual([null, null]);
    expect(judged(await paints([193, 194, 195])).same_vehicle).not.toBe("inconsistent");
    // A black SUV from the front (car-parts test photo te31): one paint, L 24.
    const black = (await checker.check("front", readFileSync(join(DATASETS, "car-parts/testset/JPEGImages/te31.jpg")))).paint;
    expect(black![0]).toBeLessThan(30);
  });
});
