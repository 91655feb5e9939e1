import { Piscina } from "piscina";
import type { DetectionResult, DetectionRunner, PhotoToInspect } from "../../core/ports/detection-runner.ts";
import type { ModelConfig } from "./load-models.ts";

/** The embedded detection runner: a pool of worker threads, so detection never blocks the API's event loop. */
export class WorkerPoolRunner implements DetectionRunner {
  readonly #pool: Piscina;

  constructor(options: { blobDir: string; threads: number; models: ModelConfig }) {
    this.#pool = new Piscina({
      filename: new URL("./detect-worker.ts", import.meta.url).href,
      workerData: { blobDir: options.blobDir, models: options.models },
      minThreads: options.threads,
      maxThreads: options.threads,
      idleTimeout: Infinity,
    });
  }

  detect(inspectionId: string, photos: PhotoToInspect[]): Promise<DetectionResult> {
    return this.#pool.run({ inspectionId, photos }) as Promise<DetectionResult>;
  }

  async close(): Promise<void> {
    await this.#pool.destroy();
  }
}
