/**
 * A photo's pixels scaled for each model's square, not yet padded (interleaved RGB, one buffer per
 * size, in `sizes`' order): what letterboxing needs from the encoded photo.
 */
export type ModelInputs = { sizes: number[]; scaled: { width: number; height: number; pixels: Buffer[] } };

/** A photo as the store decides on it: only searched angles (exterior and close-ups) have model inputs. */
export type PhotoPlace = { mediaId: string; angle: string };

/**
 * A photo's model inputs: made when a searched photo is uploaded (capture), read by processing
 * instead of decoding the photo again (inference), deleted with a replaced photo (capture) and once
 * its inspection has settled (the operator). One owner writes, reads and deletes them, so the three
 * agree on which photos have them, at which sizes, and where they lie: the adapter is
 * inference/detection/model-input.ts, over the blob store.
 */
export interface ModelInputStore {
  /** The sizes it stores, in the order processing runs the models (damage, parts, judge); none without a damage model. */
  readonly sizes: readonly number[];
  /**
   * Scales the stored photo for each size and stores the pixels, where its angle is searched and
   * there are sizes; answers them (null where none was made), so the upload's other checks need not
   * decode the photo again.
   */
  write(inspectionId: string, photo: PhotoPlace, jpeg: Buffer): Promise<ModelInputs | null>;
  /** The stored inputs of a width × height photo, or null if any is missing or not of its size. */
  read(inspectionId: string, mediaId: string, width: number, height: number): Promise<ModelInputs["scaled"] | null>;
  /** Deletes the inputs of these photos of the inspection (those that have some). */
  delete(inspectionId: string, photos: readonly PhotoPlace[]): Promise<void>;
}
