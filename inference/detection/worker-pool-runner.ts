import { Piscina } from "piscina";
import type { DetectionResult, DetectionRunner, PhotoToInspect } from "../../core/ports/detection-runner.ts";

/** The embedded detection runner: a pool of worker threads, so detection never blocks the API's event loop. */
export class WorkerPoolRunner implements DetectionRunner {
  readonly #pool: Piscina;

  constructor(options: { blobDir: string; threads: number }) {
    this.#pool = new Piscina({
      filename: new URL("./detect-worker.ts", import.meta.url).href,
      workerData: { blobDir: options.blobDir },
      minThreads: options.threads,
      maxThreads: options.threads,
      idleTimeout: Infinity,
    });
  }

  detect(_inspectionId: string, photos: PhotoToInspect[]): Promise<DetectionResult> {
    return this.#pool.run(photos) as Promise<DetectionResult>;
  }

  async close(): Promise<void> {
    await this.#pool.destroy();
  }
}
