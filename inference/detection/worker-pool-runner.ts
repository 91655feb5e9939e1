import { Piscina } from "piscina";
import type { BlobStoreConfig } from "../../core/runtime/config.ts";
import type { DetectionResult, DetectionRunner, DetectOptions, PhotoToInspect } from "../../core/ports/detection-runner.ts";
import type { ModelConfig } from "./load-models.ts";

/** The longest timer Node keeps: closing never gives up on a thread that is still inferring (see close). */
const NEVER = 2 ** 31 - 1;

/** The embedded detection runner: a pool of worker threads, so detection never blocks the API's event loop. */
export class WorkerPoolRunner implements DetectionRunner {
  readonly #pool: Piscina;
  /** Shared with every worker: set on close, and running detection stops at its next safe point. */
  readonly #stop = new Int32Array(new SharedArrayBuffer(4));

  constructor(options: { blobs: BlobStoreConfig; threads: number; models: ModelConfig }) {
    this.#pool = new Piscina({
      filename: new URL("./detect-worker.ts", import.meta.url).href,
      workerData: { blobs: options.blobs, models: options.models, stop: this.#stop },
      minThreads: options.threads,
      maxThreads: options.threads,
      idleTimeout: Infinity,
      closeTimeout: NEVER,
    });
  }

  detect(inspectionId: string, photos: PhotoToInspect[], _attempt?: number, options?: DetectOptions): Promise<DetectionResult> {
    return this.#pool.run({ inspectionId, photos, locale: options?.locale ?? null }) as Promise<DetectionResult>;
  }

  /**
   * Detection not yet on a thread is rejected at once; detection on a thread stops at its next safe
   * point (between photos and between model batches: detect-photos.ts), rejecting with
   * DetectionInterrupted. A thread is never ended in the middle of an inference: that aborts the
   * whole process (SIGABRT), since onnxruntime-node runs a model as one native call whose result
   * cannot be handed to a thread being torn down. The same holds for process.exit.
   */
  async close(): Promise<void> {
    Atomics.store(this.#stop, 0, 1);
    await this.#pool.close({ force: true });
  }
}
