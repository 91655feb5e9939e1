import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { afterAll, describe, expect, it } from "vitest";
import { fingerprintOf } from "../../capture/photos/fingerprint.ts";
import { FsBlobStore } from "../../core/adapters/fs/fs-blob-store.ts";
import { MemoryBlobStore } from "../../core/adapters/memory/memory-blob-store.ts";
import { type IndexedPhoto, PhotoIndex } from "../../core/operations/photo-index.ts";
import type { BlobStore } from "../../core/ports/blob-store.ts";
import { carPhotos } from "../helpers/photos.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const stores: { name: string; make: () => BlobStore }[] = [
  {
    name: "fs",
    make: () => {
      const d = mkdtempSync(join(tmpdir(), "vi-photo-index-"));
      dirs.push(d);
      return new FsBlobStore(d);
    },
  },
  { name: "memory", make: () => new MemoryBlobStore() },
];

const scope = { accountId: "acct_1", livemode: false };
const DAY = 86_400_000;
const t0 = Date.parse("2026-11-20T23:58:00Z");
const indexed = async (bytes: Buffer, mediaId: string, inspectionId: string, at: number): Promise<IndexedPhoto> => ({
  ...(await fingerprintOf(await sharp(bytes).jpeg({ quality: 85 }).toBuffer())),
  mediaId,
  inspectionId,
  takenAt: null,
  at,
  paint: null,
});

describe.each(stores)("the photo index over the $name blob store", ({ make }) => {
  it("finds the first inspection a picture was sent in, across days and processes, and never the photo's own inspection", async () => {
    const blobs = make();
    const [a, b, c] = carPhotos(3);
    const capture = new PhotoIndex(blobs); // the process that takes uploads
    const operator = new PhotoIndex(blobs); // the one that looks them up, reading the log capture writes
    await capture.add(scope, await indexed(a!, "med_a1", "insp_1", t0));
    await capture.add(scope, await indexed(b!, "med_b1", "insp_1", t0 + 1000));
    // Sent again two days later in another inspection, resized: the operator reads the log, finds it.
    const again = await indexed(await sharp(a!).resize(300).toBuffer(), "med_a2", "insp_2", t0 + 2 * DAY);
    await capture.add(scope, again);
    expect((await operator.firstSent(scope, again))?.mediaId).toBe("med_a1");
    // A picture first sent after the operator read the log, then sent again mirrored: it reads what came since.
    await capture.add(scope, await indexed(c!, "med_c1", "insp_3", t0 + 3 * DAY));
    const mirrored = await indexed(await sharp(c!).flop().toBuffer(), "med_c2", "insp_4", t0 + 3 * DAY + 1000);
    await capture.add(scope, mirrored);
    expect((await operator.firstSent(scope, mirrored))?.mediaId).toBe("med_c1");
    // A photo's own inspection is not "another": a retake of b in insp_1 is not reused.
    const retake = await indexed(await sharp(b!).resize(400).toBuffer(), "med_b2", "insp_1", t0 + 2000);
    await capture.add(scope, retake);
    expect(await operator.firstSent(scope, retake)).toBeNull();
    // Another account finds nothing; a new process reads the whole log, over its four days.
    expect(await operator.firstSent({ accountId: "acct_2", livemode: false }, mirrored)).toBeNull();
    expect((await new PhotoIndex(blobs).firstSent(scope, mirrored))?.mediaId).toBe("med_c1");
    expect((await new PhotoIndex(blobs).firstSent(scope, again))?.mediaId).toBe("med_a1");
  });
});
