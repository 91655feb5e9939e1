import { Piscina } from "piscina";
import type { ModelInputs } from "../../core/ports/model-input-store.ts";
import type { ExteriorAngle } from "../../core/schemas/capture.ts";
import type { Provider } from "../detection/onnx-detector.ts";
import type { CheckResult, CheckTask } from "./upload-check-worker.ts";
import { UNCHECKED, type UploadVerdict } from "./upload-checker.ts";

/** The longest timer Node keeps: closing waits for a check still inferring (worker-pool-runner.ts says why). */
const NEVER = 2 ** 31 - 1;

/**
 * The upload checks (upload-checker.ts) on a worker thread: onnxruntime-node's session.run is one
 * synchronous native call, so on the main thread each exterior upload held the API's event loop for
 * the length of its inferences (~220 ms; `npm run bench:upload-checks-thread`). One thread, started
 * on the first exterior photo and kept, since its sessions are loaded once: uploads queue behind it
 * as they queued on the main thread, and detection has its own pool.
 */
export class UploadCheckPool {
  readonly #pool: Piscina;
  readonly #onError: (error: unknown) => void;

  constructor(
    models: { partsModel: string; judgeModel: string | null },
    options: { provider?: Provider; onError: (error: unknown) => void },
  ) {
    this.#onError = options.onError;
    this.#pool = new Piscina({
      filename: new URL("./upload-check-worker.ts", import.meta.url).href,
      workerData: { models, provider: options.provider ?? "cpu" },
      minThreads: 0,
      maxThreads: 1,
      idleTimeout: Infinity,
      closeTimeout: NEVER,
    });
  }

  async check(angle: ExteriorAngle, jpeg: Buffer, inputs?: ModelInputs | null): Promise<UploadVerdict> {
    // Copies moved to the thread, not the caller's buffers: the upload keeps using the JPEG (and a
    // small Buffer lies in Node's shared pool), and a copy moved is copied once, not serialized.
    const copy = (b: Buffer) => new Uint8Array(b);
    const task: CheckTask = {
      angle,
      jpeg: copy(jpeg),
      inputs: inputs ? { sizes: inputs.sizes, scaled: { ...inputs.scaled, pixels: inputs.scaled.pixels.map(copy) } } : null,
    };
    const transferList = [task.jpeg.buffer, ...(task.inputs?.scaled.pixels.map((p) => p.buffer) ?? [])] as ArrayBuffer[];
    try {
      const { verdict, errors } = (await this.#pool.run(task, { transferList })) as CheckResult;
      for (const error of errors) this.#onError(error);
      return verdict;
    } catch (error) {
      // The thread itself failed (it could not start, or died): the checks only advise, as a model that fails.
      this.#onError(error);
      return UNCHECKED;
    }
  }

  /** Waits for a check in progress: a thread ended in the middle of an inference aborts the process. */
  async close(): Promise<void> {
    await this.#pool.close();
  }
}
