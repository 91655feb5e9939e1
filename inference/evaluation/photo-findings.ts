import { MemoryBlobStore } from "../../core/adapters/memory/memory-blob-store.ts";
import { photoBlobKey } from "../../core/domain/blob-keys.ts";
import { CLOSEUP } from "../../core/domain/closeups.ts";
import type { Comparable } from "../../core/domain/comparison.ts";
import type { BlobStore } from "../../core/ports/blob-store.ts";
import type { DetectedType } from "../../core/ports/detection-runner.ts";
import { detectPhotos, type Models } from "../detection/detect-photos.ts";
import { measureQuality } from "../quality/measure-quality.ts";

/** A finding of one photo as the comparison weighs it, with its photo and its box (relative: x, y, w, h). */
export type PhotoFinding = Comparable & { mediaId: string; type: DetectedType; box: number[] };

/**
 * One photo through processing, alone in an inspection, and its findings as the comparison weighs
 * them (handover evaluations): a walkaround photo as the front one, or, with `part`, a close-up of
 * that part (looked at as processing looks at close-ups: detect-closeups.ts; its findings on the part). Ids are `tag` and the
 * finding's index.
 */
export async function photoFindings(models: Models, bytes: Buffer, tag: string, part: string | null = null): Promise<PhotoFinding[]> {
  const blobs: BlobStore = new MemoryBlobStore();
  const mediaId = `med_${tag}`;
  const blobKey = photoBlobKey("insp_eval", mediaId);
  await blobs.put(blobKey, bytes, "image/jpeg");
  const angle = part ? CLOSEUP : "front";
  const photo = { mediaId, angle, blobKey, quality: await measureQuality(bytes), part };
  const { detections } = await detectPhotos(blobs, "insp_eval", [photo], models);
  return detections.map((d, i) => ({
    id: `${tag}${i}`,
    mediaId,
    type: d.type,
    part: d.part,
    severity: d.severity,
    part_position: d.partPosition ?? null,
    source: "model",
    review: null,
    angle,
    box: d.bbox,
  }));
}
