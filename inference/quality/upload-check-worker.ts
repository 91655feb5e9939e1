import { workerData } from "node:worker_threads";
import type { ExteriorAngle } from "../../core/schemas/capture.ts";
import type { Provider } from "../detection/onnx-detector.ts";
import { UploadChecker, type UploadVerdict } from "./upload-checker.ts";

/**
 * The upload checks' worker thread (upload-check-pool.ts): one UploadChecker, its sessions loaded on
 * the first exterior photo and reused. What it would log goes back with the verdict, since the
 * logger lives on the main thread.
 */
const data = workerData as { models: { partsModel: string; judgeModel: string | null }; provider: Provider };
let errors: Error[] = [];
const checker = new UploadChecker(data.models, {
  provider: data.provider,
  // Only Error (and what it carries as message and stack) crosses to the main thread whatever was thrown.
  onError: (error) => errors.push(error instanceof Error ? error : new Error(String(error))),
});

export type CheckTask = {
  angle: ExteriorAngle;
  jpeg: Uint8Array;
  inputs: { sizes: number[]; scaled: { width: number; height: number; pixels: Uint8Array[] } } | null;
};

export type CheckResult = { verdict: UploadVerdict; errors: Error[] };

/** Tasks run one at a time on this thread (one pending at once), so the errors gathered are this task's. */
export default async function check(task: CheckTask): Promise<CheckResult> {
  errors = [];
  // Buffers arrive as plain Uint8Arrays; sharp and the letterboxing take Buffers over the same memory.
  const buffer = (u: Uint8Array) => Buffer.from(u.buffer, u.byteOffset, u.byteLength);
  const { inputs } = task;
  const verdict = await checker.check(
    task.angle,
    buffer(task.jpeg),
    inputs && { sizes: inputs.sizes, scaled: { ...inputs.scaled, pixels: inputs.scaled.pixels.map(buffer) } },
  );
  return { verdict, errors };
}
