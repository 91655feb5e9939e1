import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { basename } from "node:path";
import * as ort from "onnxruntime-node";
import { classNames, inputSize, onnxMetadata } from "./onnx-metadata.ts";
import { candidates, clipped, fuseViews, nms, unletterboxed, unmirror, type Box, type Candidate, type Letterbox } from "./postprocess.ts";

export type Provider = "cpu" | "cuda";

/** A model file's bytes, or an error that names the file and why it cannot be read. */
export async function readModel(path: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (error) {
    throw new Error(`cannot read the model at ${path}: ${(error as Error).message}`);
  }
}
export type Detected = Box & { score: number; cls: number; name: string };

/**
 * A detection model in Ultralytics' export format ([B, 4 + C, N] out, class names in metadata):
 * ours, or any Ultralytics detection export dropped in by configuration. One session per instance,
 * created once and reused; photos go through it in batches.
 */
export class OnnxDetector {
  readonly names: string[];
  readonly size: number;
  /** For the report's `model`: the description and version from the model's metadata, else its file. */
  readonly info: { name: string; version: string };
  readonly session: ort.InferenceSession;
  /** The score each class's detections start from, by class index. */
  readonly thresholds: Float32Array;
  readonly #iou: number;

  private constructor(
    session: ort.InferenceSession,
    names: string[],
    size: number,
    thresholds: Float32Array,
    iou: number,
    info: { name: string; version: string },
  ) {
    this.session = session;
    this.info = info;
    this.names = names;
    this.size = size;
    this.thresholds = thresholds;
    this.#iou = iou;
  }

  /** `thresholds`: per class name; `fallback` for the rest. Throws with the reason when the model cannot be used. */
  static async load(
    path: string,
    options: { provider?: Provider; thresholds?: Record<string, number>; fallback?: number; iou?: number } = {},
  ): Promise<OnnxDetector> {
    const bytes = await readModel(path);
    const meta = onnxMetadata(bytes);
    const names = classNames(meta);
    const size = inputSize(meta);
    const session = await ort.InferenceSession.create(bytes, {
      executionProviders: [options.provider ?? "cpu"],
      graphOptimizationLevel: "all",
    });
    const thresholds = Float32Array.from(names, (n) => options.thresholds?.[n] ?? options.fallback ?? 0.25);
    const digest = createHash("sha256").update(bytes).digest("hex").slice(0, 12);
    const info = { name: meta.description ?? basename(path, ".onnx"), version: meta.version ? `${meta.version}+${digest}` : digest };
    return new OnnxDetector(session, names, size, thresholds, options.iou ?? 0.5, info);
  }

  /** Raw model output for a batch of letterboxed CHW tensors. */
  async forward(batch: Float32Array[]): Promise<{ data: Float32Array; n: number }> {
    const plane = 3 * this.size * this.size;
    const input = new Float32Array(batch.length * plane);
    for (const [i, chw] of batch.entries()) input.set(chw, i * plane);
    const feeds = { [this.session.inputNames[0]!]: new ort.Tensor("float32", input, [batch.length, 3, this.size, this.size]) };
    const out = (await this.session.run(feeds))[this.session.outputNames[0]!]!;
    const dims = out.dims as number[];
    if (dims.length !== 3 || dims[1] !== 4 + this.names.length) {
      throw new Error(
        `model output is [${dims.join(", ")}], expected [batch, ${4 + this.names.length}, anchors] (Ultralytics detection format)`,
      );
    }
    return { data: out.data as Float32Array, n: dims[2]! };
  }

  /**
   * Detections per photo, in the photo's own pixels. A photo marked `mirrored` (a close-up) is also
   * run flipped left to right, in the same batch, and the two views' detections are fused
   * (fuseViews): see MIRRORED.
   */
  async detect(batch: { chw: Float32Array; lb: Letterbox; mirrored?: boolean }[], thresholds?: ArrayLike<number>): Promise<Detected[][]> {
    const th = thresholds ?? this.thresholds;
    return (await this.views(batch, th)).map((views, i) => fused(views, th, batch[i]!.lb));
  }

  /**
   * Each photo's views, not yet fused: its detections as it is and, where marked `mirrored`, its
   * mirror image's, each view through NMS, in the photo's own pixels but not clipped to it (`fused`
   * clips, after fusing). A mirrored photo's views are
   * read from a low floor (viewFloor), so a box under a class's threshold in one view still counts
   * towards the fused score; a photo seen once is read from its class thresholds.
   */
  async views(batch: { chw: Float32Array; lb: Letterbox; mirrored?: boolean }[], thresholds?: ArrayLike<number>): Promise<Detected[][][]> {
    if (batch.length === 0) return [];
    const { data, n } = await this.forward(batch.flatMap((b) => (b.mirrored ? [b.chw, mirror(b.chw, this.size)] : [b.chw])));
    const nc = this.names.length;
    const th = thresholds ?? this.thresholds;
    const floor = viewFloor(th);
    const inPhoto = (c: Candidate, lb: Letterbox): Detected => ({
      ...unletterboxed(c, lb),
      score: c.score,
      cls: c.cls,
      name: this.names[c.cls]!,
    });
    let v = 0;
    return batch.map(({ lb, mirrored }) =>
      mirrored
        ? [
            nms(candidates(data, v++, nc, n, floor), this.#iou).map((c) => inPhoto(c, lb)),
            nms(candidates(data, v++, nc, n, floor), this.#iou).map((c) => inPhoto(unmirror(c, this.size), lb)),
          ]
        : [nms(candidates(data, v++, nc, n, th), this.#iou).map((c) => inPhoto(c, lb))],
    );
  }

  async close(): Promise<void> {
    await this.session.release();
  }
}

/**
 * How a close-up is looked at (issue 36: "close-ups run through the damage model at full
 * strength"): as it is and mirrored, each view's boxes through NMS, fused where they overlap by more
 * than `fuseIou`; `floor` is the lowest score read from each view before fusing (a fused score is
 * the mean of the views', so a view's box under the class threshold still counts). Chosen on
 * car-damage `valid` with `eval`, for two model runs a close-up in one batch: the figures and the
 * variants tried are in the damage model's card.
 */
export const MIRRORED = { fuseIou: 0.6, floor: 0.01 } as const;

/**
 * One photo's detections from its views (OnnxDetector.views): a single view as it is; several fused
 * (fuseViews at MIRRORED.fuseIou), then held to `thresholds`; clipped to the photo (`size`: its width
 * and height, as a Letterbox gives them).
 */
export function fused(views: Detected[][], thresholds: ArrayLike<number>, size: { width: number; height: number }): Detected[] {
  const found = views.length === 1 ? views[0]! : fuseViews(views, MIRRORED.fuseIou).filter((c) => c.score >= thresholds[c.cls]!);
  return found.map((d) => clipped(d, size));
}

/** The score each class is read from in one view of several: its threshold, or MIRRORED's floor where that is lower. */
export const viewFloor = (thresholds: ArrayLike<number>): number[] => Array.from(thresholds, (t) => Math.min(t, MIRRORED.floor));

/** A size×size CHW tensor flipped left to right. */
export function mirror(chw: Float32Array, size: number): Float32Array {
  const out = new Float32Array(chw.length);
  for (let row = 0; row < chw.length; row += size) {
    for (let x = 0, end = row + size - 1; x < size; x++) out[row + x] = chw[end - x]!;
  }
  return out;
}
