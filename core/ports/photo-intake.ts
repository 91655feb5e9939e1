import type { Fingerprint } from "../domain/photo-fingerprint.ts";
import type { Quality } from "../schemas/report.ts";

/** An uploaded photo as the service keeps it: format checked, decoded, upright, re-encoded as JPEG without metadata. */
export type IngestedPhoto = { jpeg: Buffer; width: number; height: number; etag: string; quality: Quality };

/**
 * What capture does with an uploaded photo's bytes (capture/photos/: ingest-photo.ts, fingerprint.ts).
 * The capture operations take it as an argument, so core/ imports no image code.
 */
export type PhotoIntake = {
  /** Checks the bytes are the declared format and keeps them as `IngestedPhoto`; an ApiError for a client's mistake. */
  ingest(upload: Buffer, declaredType: string): Promise<IngestedPhoto>;
  /** The stored photo's fingerprint, for the recycled-photo index (core/operations/photo-index.ts). */
  fingerprint(jpeg: Buffer): Promise<Fingerprint>;
  /** When the camera says the photo was taken, read from the upload as sent; null when it does not say. */
  takenAt(upload: Buffer): Promise<number | null>;
};
