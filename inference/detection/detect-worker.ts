import { workerData } from "node:worker_threads";
import { FsBlobStore } from "../../core/adapters/fs/fs-blob-store.ts";
import type { DetectionResult, PhotoToInspect } from "../../core/ports/detection-runner.ts";
import { detectPhotos } from "./detect-photos.ts";
import { loadModels, type ModelConfig } from "./load-models.ts";

/** A detection worker thread: its model sessions are created once and reused for every inspection. */
const data = workerData as { blobDir: string; models: ModelConfig; stop: Int32Array };
const stopping = () => Atomics.load(data.stop, 0) === 1;
const blobs = new FsBlobStore(data.blobDir);
const models = loadModels(data.models);
// A load failure surfaces on each task (and fails the inspection with its reason), not as a crash.
models.catch(() => {});

export default async function detect(task: { inspectionId: string; photos: PhotoToInspect[] }): Promise<DetectionResult> {
  return detectPhotos(blobs, task.inspectionId, task.photos, await models, stopping);
}
