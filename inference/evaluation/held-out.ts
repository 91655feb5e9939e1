import { createHash } from "node:crypto";

/**
 * The part of car-damage-severity kept out of training, for measuring the product on whole cars:
 * a fifth of the source photos, chosen by a hash of the source photo's name (the part of the file
 * name before Roboflow's `_jpg.rf.<hash>` suffix), so the split never changes and never depends on
 * the order files are listed in. Training code applies the same rule (sha256 of the source name,
 * first byte mod 5 is 0) to leave these out.
 */
export function sourcePhotoOf(fileName: string): string {
  return fileName.replace(/_(jpe?g|png)_jpg\.rf\.[0-9a-f]+\.jpg$/i, "").replace(/\.rf\.[0-9a-f]+\.jpg$/i, "");
}

/** The number of parts the source photos are split into by that hash. */
export const FOLDS = 5;
/** The part that training never reads. */
export const HELD_OUT_FOLD = 0;

/** Which of the FOLDS parts a photo falls in; the others than HELD_OUT_FOLD are trained on. */
export function foldOf(fileName: string): number {
  return createHash("sha256").update(sourcePhotoOf(fileName)).digest()[0]! % FOLDS;
}

export function isHeldOut(fileName: string): boolean {
  return foldOf(fileName) === HELD_OUT_FOLD;
}
