import { readFileSync } from "node:fs";
import { modelInputBlobKey } from "../../core/domain/blob-keys.ts";
import type { BlobStore } from "../../core/ports/blob-store.ts";
import type { ModelInputs, ModelInputStore, PhotoPlace } from "../../core/ports/model-input-store.ts";
import { isSearched } from "../../core/schemas/capture.ts";
import { fit, scaleForModels, type ScaledPixels } from "./letterbox.ts";
import { inputSize, onnxMetadata } from "./onnx-metadata.ts";

/*
 * A photo's model inputs: its pixels scaled for each model's square (raw RGB, a blob per size), made
 * when the photo is uploaded. Processing, which runs where the models run (GPU nodes in a cluster),
 * reads them instead of decoding the photo again. Decoding is most of what detection costs besides
 * the model: for a 12 MP phone photo, 20 ms of CPU for both models' inputs, against 25.5 ms of CPU
 * for the damage model's run on this 2-core machine, and far less on a GPU. A photo without them
 * (uploaded before they existed, or for a model of another size) is decoded as before.
 */

/**
 * The sizes a photo's model inputs are kept at, in the order processing reads them: the damage
 * model's, the parts model's, the judgement's, then the close-up model's where no other model has
 * its size already (the shipped one shares the judgement's 512).
 */
export function inputSizesFor(damage: number, parts: number | null, judge: number | null, closeup: number | null): number[] {
  const sizes = [damage, parts, judge].filter((s) => s !== null);
  return closeup === null || sizes.includes(closeup) ? sizes : [...sizes, closeup];
}

/**
 * The input sizes of the configured models (inputSizesFor); none without a damage model, or if a
 * model file cannot be read (processing then fails, saying why).
 */
export function modelInputSizes(models: {
  damageModel: string | null;
  partsModel: string | null;
  judgeModel?: string | null;
  closeupModel?: string | null;
}): number[] {
  if (!models.damageModel) return [];
  try {
    const size = (p: string | null | undefined) => (p ? inputSize(onnxMetadata(readFileSync(p))) : null);
    return inputSizesFor(size(models.damageModel)!, size(models.partsModel), size(models.judgeModel), size(models.closeupModel));
  } catch {
    return [];
  }
}

/**
 * The model inputs in the blob store (core/ports/model-input-store.ts): capture writes them, processing
 * reads them, the operator deletes them, each through this one class.
 */
export class BlobModelInputStore implements ModelInputStore {
  readonly sizes: readonly number[];
  readonly #blobs: BlobStore;

  /** `sizes`: the models' input sizes, in processing's order (modelInputSizes for the configured models). */
  constructor(blobs: BlobStore, sizes: readonly number[]) {
    this.#blobs = blobs;
    this.sizes = sizes;
  }

  /** The sizes a photo of this angle has inputs for: only exterior photos and close-ups are searched for damage. */
  #sizesOf(angle: string): number[] {
    return isSearched(angle) ? [...this.sizes] : [];
  }

  /** Its letterboxed tensors are then the ones decoding the photo gives. */
  async write(inspectionId: string, photo: PhotoPlace, jpeg: Buffer): Promise<ModelInputs | null> {
    const sizes = this.#sizesOf(photo.angle);
    if (sizes.length === 0) return null;
    const scaled = await scaleForModels(jpeg, sizes);
    await Promise.all(
      sizes.map((size, k) =>
        this.#blobs.put(modelInputBlobKey(inspectionId, photo.mediaId, size), scaled.pixels[k]!, "application/octet-stream"),
      ),
    );
    return { sizes, scaled };
  }

  async read(inspectionId: string, mediaId: string, width: number, height: number): Promise<ScaledPixels | null> {
    const pixels = await Promise.all(this.sizes.map((size) => this.#blobs.get(modelInputBlobKey(inspectionId, mediaId, size))));
    const whole = pixels.every((p, k): p is Buffer => {
      const { w, h } = fit(width, height, this.sizes[k]!);
      return p !== null && p.length === w * h * 3;
    });
    return whole ? { width, height, pixels } : null;
  }

  /**
   * Deleted once a photo is replaced, and once its inspection has settled (completed, failed,
   * canceled or expired): only processing reads them. At today's sizes they are about 560 KB a
   * photo, more than most photos.
   */
  async delete(inspectionId: string, photos: readonly PhotoPlace[]): Promise<void> {
    await Promise.all(
      photos.flatMap((p) => this.#sizesOf(p.angle).map((size) => this.#blobs.delete(modelInputBlobKey(inspectionId, p.mediaId, size)))),
    );
  }
}
