import sharp from "sharp";
import type { BlobStore } from "../../core/ports/blob-store.ts";
import { measureQuality } from "../quality/measure-quality.ts";
import type { DetectionResult, PhotoOutcome, PhotoToInspect } from "../../core/ports/detection-runner.ts";

/**
 * The detection pipeline for one inspection. No damage model is wired in yet (it is its own
 * issue), so it checks that each photo is readable and measures its quality, and reports no findings
 * with `model: null` rather than inventing any.
 */
export async function detectPhotos(blobs: BlobStore, photos: PhotoToInspect[]): Promise<DetectionResult> {
  const outcomes: PhotoOutcome[] = [];
  for (const photo of photos) {
    const bytes = await blobs.get(photo.blobKey);
    if (!bytes) {
      outcomes.push({ mediaId: photo.mediaId, readable: false, quality: null });
      continue;
    }
    try {
      await sharp(bytes, { failOn: "error" }).stats();
      outcomes.push({ mediaId: photo.mediaId, readable: true, quality: await measureQuality(bytes) });
    } catch {
      outcomes.push({ mediaId: photo.mediaId, readable: false, quality: null });
    }
  }
  return { model: null, photos: outcomes, detections: [] };
}
