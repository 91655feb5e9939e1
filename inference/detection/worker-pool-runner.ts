import { Piscina } from "piscina";
import type { DetectionResult, DetectionRunner, PhotoToInspect } from "../../core/ports/detection-runner.ts";
import type { ModelConfig } from "./load-models.ts";

/** The longest timer Node keeps: closing never gives up on a thread that is still inferring (see close). */
const NEVER = 2 ** 31 - 1;

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
      closeTimeout: NEVER,
    });
  }

  detect(inspectionId: string, photos: PhotoToInspect[]): Promise<DetectionResult> {
    return this.#pool.run({ inspectionId, photos }) as Promise<DetectionResult>;
  }

  /**
   * Detection not yet on a thread is rejected at once; detection on a thread is let finish first.
   * Ending a thread in the middle of an inference aborts the whole process (SIGABRT): onnxruntime-node
   * runs a model as one synchronous native call, and its result cannot be handed to a thread that is
   * being torn down. The same holds for process.exit, which ends the threads the same way.
   */
  async close(): Promise<void> {
    await this.#pool.close({ force: true });
  }
}
