import { workerData } from "node:worker_threads";
import { FsBlobStore } from "../../core/adapters/fs/fs-blob-store.ts";
import type { DetectionResult, PhotoToInspect } from "../../core/ports/detection-runner.ts";
import { detectPhotos } from "./detect-photos.ts";

/** A detection worker thread: one per configured thread, created once and reused across inspections. */
const blobs = new FsBlobStore((workerData as { blobDir: string }).blobDir);

export default function detect(photos: PhotoToInspect[]): Promise<DetectionResult> {
  return detectPhotos(blobs, photos);
}
