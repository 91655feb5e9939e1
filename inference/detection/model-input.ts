import { readFileSync } from "node:fs";
import { modelInputBlobKey } from "../../core/domain/blob-keys.ts";
import type { BlobStore } from "../../core/ports/blob-store.ts";
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
 * The input sizes of the configured models, in the order processing runs them (damage, parts, judge);
 * none without a damage model, or if a model file cannot be read (processing then fails, saying why).
 */
export function modelInputSizes(models: { damageModel: string | null; partsModel: string | null; judgeModel?: string | null }): number[] {
  if (!models.damageModel) return [];
  try {
    return [models.damageModel, models.partsModel, models.judgeModel ?? null]
      .filter((p) => p !== null)
      .map((p) => inputSize(onnxMetadata(readFileSync(p))));
  } catch {
    return [];
  }
}

/** A photo's pixels scaled for each of `sizes`, in that order (`scaled.pixels[k]` is for `sizes[k]`). */
export type ModelInputs = { sizes: number[]; scaled: ScaledPixels };

/**
 * Scales the stored photo for each size and stores the pixels. Its letterboxed tensors are then the
 * ones decoding it gives. Returns them (null for no sizes), so the upload's other checks need not
 * decode the photo again.
 */
export async function storeModelInputs(
  blobs: BlobStore,
  inspectionId: string,
  mediaId: string,
  jpeg: Buffer,
  sizes: number[],
): Promise<ModelInputs | null> {
  if (sizes.length === 0) return null;
  const scaled = await scaleForModels(jpeg, sizes);
  await Promise.all(
    sizes.map((size, k) => blobs.put(modelInputBlobKey(inspectionId, mediaId, size), scaled.pixels[k]!, "application/octet-stream")),
  );
  return { sizes, scaled };
}

export async function deleteModelInputs(blobs: BlobStore, inspectionId: string, mediaId: string, sizes: number[]): Promise<void> {
  await Promise.all(sizes.map((size) => blobs.delete(modelInputBlobKey(inspectionId, mediaId, size))));
}

/**
 * Deletes the model inputs of an inspection's searched photos (exterior and close-ups), once it has
 * settled (completed, failed, canceled or expired): only processing reads them. At today's sizes
 * they are about 560 KB a photo, more than most photos.
 */
export async function deleteInspectionModelInputs(
  blobs: BlobStore,
  inspectionId: string,
  photos: readonly { mediaId: string; angle: string }[],
  sizes: number[],
): Promise<void> {
  await Promise.all(photos.filter((p) => isSearched(p.angle)).map((p) => deleteModelInputs(blobs, inspectionId, p.mediaId, sizes)));
}

/** The stored model inputs of a width × height photo, or null if any is missing or not of its size. */
export async function loadModelInputs(
  blobs: BlobStore,
  inspectionId: string,
  mediaId: string,
  width: number,
  height: number,
  sizes: number[],
): Promise<ScaledPixels | null> {
  const pixels = await Promise.all(sizes.map((size) => blobs.get(modelInputBlobKey(inspectionId, mediaId, size))));
  const whole = pixels.every((p, k): p is Buffer => {
    const { w, h } = fit(width, height, sizes[k]!);
    return p !== null && p.length === w * h * 3;
  });
  return whole ? { width, height, pixels } : null;
}
