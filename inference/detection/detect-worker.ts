import { workerData } from "node:worker_threads";
import { blobStoreFrom } from "../../core/adapters/blob-store-from.ts";
import type { BlobStoreConfig } from "../../core/runtime/config.ts";
import type { DetectionResult, PhotoToInspect } from "../../core/ports/detection-runner.ts";
import { detectPhotos } from "./detect-photos.ts";
import { loadModels, type ModelConfig } from "./load-models.ts";

/** A detection worker thread: its model sessions are created once and reused for every inspection. */
const data = workerData as { blobs: BlobStoreConfig; models: ModelConfig; stop: Int32Array };
const stopping = () => Atomics.load(data.stop, 0) === 1;
// The same kind of store as the API process's, built from the same configuration.
const blobs = blobStoreFrom(data.blobs);
const models = loadModels(data.models);
// A load failure surfaces on each task (and fails the inspection with its reason), not as a crash.
models.catch(() => {});

export default async function detect(task: {
  inspectionId: string;
  photos: PhotoToInspect[];
  locale: string | null;
}): Promise<DetectionResult> {
  return detectPhotos(blobs, task.inspectionId, task.photos, await models, stopping, task.locale);
}
