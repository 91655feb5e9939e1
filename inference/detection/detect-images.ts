import { fromScaled, letterboxes, type Letterboxed, type ScaledPixels } from "./letterbox.ts";
import { fused, type Detected, type OnnxDetector } from "./onnx-detector.ts";
import type { Letterbox } from "./postprocess.ts";

/** `found`: the photo's detections; `views`: before its views were fused and clipped (one view unless mirrored; OnnxDetector.views). */
export type ImageDetections = { found: Detected[]; views: Detected[][]; lb: Letterbox };

/**
 * Photos through one or more detectors (the damage and the parts model) in batches. A photo is
 * either encoded, and decoded once for all of them, or already scaled for each detector's size, in
 * the detectors' order (the model inputs stored on upload). The first detector runs while the next
 * batch is prepared (sharp, on libuv's threads, hiding in whatever CPU the model leaves idle); the
 * others run after it over the tensors kept from that batch, one model at a time: alternating the
 * models batch by batch measured 10% slower, each evicting the other's weights from the CPU caches.
 * Returns, for each detector, each photo's detections and letterbox geometry, in order.
 * `thresholds[k]` overrides detector k's own score thresholds (evaluation scores everything);
 * `mirrored[i]` has the first detector (the damage model, or the close-up model) look at photo i
 * mirrored too (a close-up: OnnxDetector.views and detect-closeups.ts); `stopping` is called before each batch and throws to stop there.
 */
export async function detectImages(
  detectors: OnnxDetector[],
  images: (Buffer | ScaledPixels)[],
  {
    batchSize = 8,
    thresholds = [],
    mirrored = [],
    stopping,
  }: { batchSize?: number; thresholds?: (ArrayLike<number> | undefined)[]; mirrored?: boolean[]; stopping?: () => void } = {},
): Promise<ImageDetections[][]> {
  const sizes = detectors.map((d) => d.size);
  const prepare = (from: number): Promise<Letterboxed[][]> =>
    Promise.all(
      images
        .slice(from, from + batchSize)
        .map(async (image) => (Buffer.isBuffer(image) ? letterboxes(image, sizes) : fromScaled(image, sizes))),
    );
  const out: ImageDetections[][] = detectors.map(() => []);
  const run = async (k: number, batch: Letterboxed[], from: number) => {
    // Between batches is where a stopping process can leave: never inside a model's run.
    stopping?.();
    const detector = detectors[k]!;
    const views = await detector.views(
      k === 0 ? batch.map((input, i) => ({ ...input, mirrored: mirrored[from + i] === true })) : batch,
      thresholds[k],
    );
    for (const [i, input] of batch.entries())
      out[k]!.push({ found: fused(views[i]!, thresholds[k] ?? detector.thresholds, input.lb), views: views[i]!, lb: input.lb });
  };
  const kept: Letterboxed[][] = [];
  let next = images.length > 0 ? prepare(0) : null;
  for (let from = 0; next; from += batchSize) {
    const inputs = await next;
    next = from + batchSize < images.length ? prepare(from + batchSize) : null;
    // A photo that fails to decode rejects the batch being prepared; keep that rejection from
    // going unhandled while this batch runs.
    next?.catch(() => {});
    await run(
      0,
      inputs.map((perModel) => perModel[0]!),
      from,
    );
    kept.push(...inputs.map((perModel) => perModel.slice(1)));
  }
  for (let k = 1; k < detectors.length; k++) {
    for (let from = 0; from < kept.length; from += batchSize)
      await run(
        k,
        kept.slice(from, from + batchSize).map((perModel) => perModel[k - 1]!),
        from,
      );
  }
  return out;
}
