import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXTERIOR_ANGLES } from "../../core/schemas/capture.ts";
import { carPhotos } from "../helpers/photos.ts";
import { startService, type TestService } from "../helpers/service.ts";
import { create, walkaround } from "../helpers/walkaround.ts";

/**
 * No recycled photos (issue 32): a photo already sent in another inspection of the account, the
 * same picture resized, re-encoded, cropped or mirrored, is named with the inspection it came from;
 * one whose camera time is well before the capture link is named too; either sends the report to review.
 */
describe("integrity: photos sent before", () => {
  let svc: TestService;
  let key: string;
  beforeAll(async () => {
    svc = await startService();
    key = await svc.key("test");
  }, 60_000);
  afterAll(() => svc.close());

  const report = async (id: string) => (await svc.api(key, `/v1/inspections/${id}/report`)).json();

  it("names a resized, a cropped and a mirrored copy of another inspection's photos, and a photo taken before the link", async () => {
    const photos = carPhotos(20);
    const first = await create(svc, key);
    await walkaround(svc, key, first);
    const firstReport = await report(first.id);
    expect(firstReport.integrity).toEqual({ same_vehicle: "unknown", inconsistent_photos: [], reused_photos: [] });

    // The second walkaround: other photos (the 10th on), but three pictures of the first again, and
    // one photo whose camera says it was taken in 2020.
    const [front, rear, left] = [photos[0]!, photos[4]!, photos[2]!];
    const meta = await sharp(rear).metadata();
    const cut = Math.round((meta.width ?? 0) * 0.03);
    const again = {
      front: await sharp(front).resize(300).jpeg({ quality: 60 }).toBuffer(),
      rear: await sharp(rear)
        .extract({ left: cut, top: 0, width: (meta.width ?? 0) - 2 * cut, height: meta.height ?? 0 })
        .toBuffer(),
      left: await sharp(left).flop().toBuffer(),
      right: await sharp(photos[15]!)
        .withExif({ IFD2: { DateTimeOriginal: "2020:01:02 10:11:12" } })
        .toBuffer(),
    };
    const over = [...EXTERIOR_ANGLES, "vin"].map((angle, i) => ({
      angle,
      bytes: again[angle as keyof typeof again] ?? photos[10 + i]!,
    }));
    const second = await create(svc, key);
    await walkaround(svc, key, second, { over });
    const r = await report(second.id);
    const mediaOf = (angle: string) => r.photos.find((p: any) => p.angle === angle).media_id;
    expect(r.integrity.same_vehicle).toBe("unknown");
    expect(r.integrity.reused_photos).toEqual(
      expect.arrayContaining([
        { media_id: mediaOf("front"), inspection: first.id, reason: "sent_before", taken_at: null },
        { media_id: mediaOf("rear"), inspection: first.id, reason: "sent_before", taken_at: null },
        { media_id: mediaOf("left"), inspection: first.id, reason: "sent_before", taken_at: null },
        { media_id: mediaOf("right"), inspection: null, reason: "taken_before_link", taken_at: "2020-01-02T10:11:12Z" },
      ]),
    );
    expect(r.integrity.reused_photos).toHaveLength(4);
    expect(r.review).toMatchObject({ status: "required", reasons: expect.arrayContaining(["photos_reused"]) });

    // Another account's photos are not this account's: the same pictures are new there.
    const otherKey = await svc.key("test", "acct_other_integrity");
    const elsewhere = await create(svc, otherKey);
    await walkaround(svc, otherKey, elsewhere);
    const theirs = await (await svc.api(otherKey, `/v1/inspections/${elsewhere.id}/report`)).json();
    expect(theirs.integrity.reused_photos).toEqual([]);
  }, 120_000);
});
