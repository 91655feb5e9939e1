import { photoBlobKey } from "../domain/blob-keys.ts";
import type { Branding } from "../domain/branding.ts";
import { CaptureLinks } from "../domain/capture-links.ts";
import { requiredAngles } from "../domain/capture-plan.ts";
import { CLOSEUP, type VehiclePart } from "../domain/closeups.ts";
import { ApiError } from "../domain/errors.ts";
import { newId } from "../domain/ids.ts";
import type { Paint } from "../domain/same-vehicle.ts";
import { captureLinkState, isCaptureOpen } from "../domain/state-machine.ts";
import type { IngestedPhoto, PhotoIntake } from "../ports/photo-intake.ts";
import type { ModelInputs } from "../ports/model-input-store.ts";
import type { InspectionRecord, MediaRecord, PhotoRecord } from "../ports/records.ts";
import type { Services } from "../runtime/services.ts";
import { isExterior, type SuggestedCloseup } from "../schemas/capture.ts";
import type { Quality } from "../schemas/report.ts";
import type { DecodedVehicle } from "../vin/vin-decoder.ts";
import { awaitController } from "./await-controller.ts";
import type { PhotoIndex } from "./photo-index.ts";

/*
 * What the capture API does (capture/routes/capture-routes.ts answers over HTTP), authenticated by
 * the capture token alone and usable while the inspection is created or in_progress and before its
 * expires_at. Each throws ApiError on a client's mistake.
 */

const linkInactive = (state: string) =>
  new ApiError("capture_link_inactive", `This capture link is no longer active: the inspection is ${state}.`);

/** The inspection a capture token opens, while its link is active. */
export async function openCapture(s: Services, token: string): Promise<InspectionRecord> {
  const inspection = await s.inspections.getByCaptureTokenHash(CaptureLinks.hash(token));
  if (!inspection)
    throw new ApiError("resource_missing", "This capture link does not exist; check that it was copied whole.", { param: "token" });
  const state = captureLinkState(inspection.status, inspection.expiresAt, s.clock.now());
  if (state !== "active") throw linkInactive(state);
  return inspection;
}

/**
 * Whether the inspection takes a photo there (capture at creation): an angle its steps ask for, a
 * close-up unless close-ups are off. A refusal names what it does take, so a native app can correct itself.
 */
export function checkPlace(r: InspectionRecord, angle: string): void {
  if (angle === CLOSEUP) {
    if (r.capture.closeups === "off")
      throw new ApiError("closeups_off", "This inspection takes no close-ups (its capture.closeups is off); send the steps' photos only.");
    return;
  }
  if (!r.capture.steps.some((s) => s.angle === angle)) {
    const asked = r.capture.steps.map((s) => s.angle).join(", ");
    throw new ApiError("angle_not_requested", `This inspection does not ask for a photo of ${angle}; its steps are: ${asked}.`, {
      param: "angle",
    });
  }
}

/**
 * The state an inspection whose capture the store has closed is in, or is moving to: an intent
 * recorded but not yet applied by the controller reads as the state it leads to (cancel first, as
 * the controller decides).
 */
function closingState(r: InspectionRecord, now: number): string {
  const state = captureLinkState(r.status, r.expiresAt, now);
  if (state !== "active") return state;
  return r.cancelRequestedAt !== null ? "canceled" : "processing";
}

/** What the capture session shows (core/views/capture-session-view.ts): the inspection, its photos, the account's branding. */
export type CaptureSessionState = { inspection: InspectionRecord; photos: PhotoRecord[]; branding: Branding };

/** Opens the capture session: the first open moves a created inspection to in_progress (the controller's move, awaited). */
export async function openSession(s: Services, token: string): Promise<CaptureSessionState> {
  let inspection = await openCapture(s, token);
  if (inspection.status === "created") {
    await s.inspections.recordOpened(inspection.id, s.clock.now());
    inspection = await awaitController(s, inspection.id, (r) => r.status !== "created");
  }
  const [photos, branding] = await Promise.all([s.inspections.photos(inspection.id), s.keys.branding(inspection.accountId)]);
  return { inspection, photos, branding };
}

/** Where a photo goes: an angle's step (slot null), or a close-up's slot with the part it may name. */
export type PhotoPlace = { angle: string; slot: number | null; part: VehiclePart | null };
/** What an upload needs besides the services: capture's photo handling, and the process's photo index. */
export type UploadTools = PhotoIntake & { index: PhotoIndex };
export type UploadedPhoto = { mediaId: string; photo: IngestedPhoto; suggested: SuggestedCloseup[] };

/**
 * Stores an uploaded photo (of an angle, or a close-up in its slot): checked and re-encoded
 * (`tools.ingest`), its model inputs stored where processing searches it, an exterior photo checked
 * for its angle and for close-ups worth asking for, and every photo indexed as sent.
 */
export async function uploadPhoto(
  s: Services,
  tools: UploadTools,
  token: string,
  place: PhotoPlace,
  upload: { body: unknown; declaredType: string },
): Promise<UploadedPhoto> {
  const inspection = await openCapture(s, token);
  checkPlace(inspection, place.angle);
  const { body } = upload;
  if (!Buffer.isBuffer(body) || body.length === 0) {
    throw new ApiError("parameter_missing", "Send the photo as the request body.", { param: "photo" });
  }
  const photo = await tools.ingest(body, upload.declaredType);
  const { angle } = place;
  const now = s.clock.now();
  const mediaId = newId("med");
  const blobKey = photoBlobKey(inspection.id, mediaId);
  // Blobs first, then the row that points at them: a crash in between leaves orphan files, never a dangling row.
  const [, inputs, fingerprint, taken] = await Promise.all([
    s.blobs.put(blobKey, photo.jpeg, "image/jpeg"),
    s.modelInputs.write(inspection.id, { mediaId, angle }, photo.jpeg),
    tools.fingerprint(photo.jpeg),
    tools.takenAt(body),
  ]);
  const checked = await checkOnUpload(s, inspection, angle, photo, inputs);
  photo.quality = checked.quality;
  // Stored only if the capture is still open now: a submit or cancel may have landed while the photo was ingested.
  const stored = await s.inspections.putPhoto(...photoRows(inspection, place, { mediaId, blobKey, photo, now }));
  if (!stored.accepted) {
    await Promise.all([s.blobs.delete(blobKey), s.modelInputs.delete(inspection.id, [{ mediaId, angle }])]);
    throw linkInactive(closingState((await s.inspections.getById(inspection.id))!, now));
  }
  // Every photo sent is indexed, retakes too: a picture sent once was sent (core/operations/photo-index.ts).
  await tools.index.add(inspection, {
    ...fingerprint,
    mediaId,
    inspectionId: inspection.id,
    takenAt: taken,
    at: now,
    paint: checked.paint,
  });
  // Only now that no row points at the replaced photo can its blobs go.
  const { replaced } = stored;
  if (replaced)
    await Promise.all([s.blobs.delete(replaced.blobKey), s.modelInputs.delete(inspection.id, [{ mediaId: replaced.id, angle }])]);
  return { mediaId, photo, suggested: checked.suggested };
}

/**
 * The model checks on an exterior photo (Services.uploadChecks): a photo of another side than its
 * angle fails its quality with wrong_angle; the close-ups worth asking for; the vehicle's paint.
 */
async function checkOnUpload(
  s: Services,
  inspection: InspectionRecord,
  angle: string,
  photo: IngestedPhoto,
  inputs: ModelInputs | null,
): Promise<{ quality: Quality; suggested: SuggestedCloseup[]; paint: Paint | null }> {
  if (!isExterior(angle) || !s.uploadChecks) return { quality: photo.quality, suggested: [], paint: null };
  const verdict = await s.uploadChecks.check(angle, photo.jpeg, inputs);
  const { quality } = photo;
  return {
    quality: verdict.wrongAngle ? { ...quality, passed: false, problems: [...quality.problems, "wrong_angle"] } : quality,
    // Where close-ups are off, none is suggested: the page must never ask for what the API refuses.
    suggested: inspection.capture.closeups !== "off" ? verdict.suggestedCloseups : [],
    paint: verdict.paint,
  };
}

/** The photo's row and its media row, as putPhoto stores them. */
function photoRows(
  inspection: InspectionRecord,
  place: PhotoPlace,
  { mediaId, blobKey, photo, now }: { mediaId: string; blobKey: string; photo: IngestedPhoto; now: number },
): [PhotoRecord, MediaRecord] {
  const { width, height } = photo;
  return [
    { inspectionId: inspection.id, ...place, mediaId, width, height, quality: photo.quality, tries: 1, capturedAt: now },
    {
      id: mediaId,
      accountId: inspection.accountId,
      livemode: inspection.livemode,
      inspectionId: inspection.id,
      kind: "photo",
      blobKey,
      bytes: photo.jpeg.length,
      etag: photo.etag,
      width,
      height,
      createdAt: now,
    },
  ];
}

/** A VIN decoded for the customer to check, and whether it is the inspection's. */
export type VinCheck = { matchesVehicle: boolean; decoded: DecodedVehicle };

/** Decodes a VIN (normalised and checked by the schema) for the customer, recording nothing. */
export async function checkVin(s: Services, token: string, vin: string): Promise<VinCheck> {
  const inspection = await openCapture(s, token);
  return { matchesVehicle: vin === inspection.vin, decoded: await s.vin.decode(vin) };
}

/** Records the VIN read from the vehicle or typed, and decodes it. */
export async function confirmVin(s: Services, token: string, vin: string): Promise<VinCheck> {
  const inspection = await openCapture(s, token);
  await s.inspections.recordVinObserved(inspection.id, vin);
  return { matchesVehicle: vin === inspection.vin, decoded: await s.vin.decode(vin) };
}

/**
 * Submits the walkthrough for processing once every required angle has its photo: records the
 * intent and waits for the controller to move the inspection; resolves once it is accepted.
 */
export async function submitCapture(s: Services, token: string): Promise<void> {
  const inspection = await openCapture(s, token);
  const done = new Set((await s.inspections.photos(inspection.id)).filter((p) => p.slot === null).map((p) => p.angle));
  const missing = requiredAngles(inspection.capture).filter((a) => !done.has(a));
  if (missing.length) throw new ApiError("capture_incomplete", `Photos are still missing for: ${missing.join(", ")}.`);
  const now = s.clock.now();
  if (inspection.status === "created") await s.inspections.recordOpened(inspection.id, now);
  await s.inspections.recordSubmitRequested(inspection.id, now);
  const after = await awaitController(s, inspection.id, (r) => !isCaptureOpen(r.status));
  if (!isCaptureOpen(after.status) && after.status !== "processing" && after.status !== "completed" && after.status !== "failed")
    throw linkInactive(after.status);
  // Not moved yet (no controller leads this moment: a failover): the submit intent is durable and
  // the next leader processes it, so the answer does not wait for one. Only a cancel recorded
  // first wins over it (the controller's rule), and then the link is closed.
  if (isCaptureOpen(after.status) && after.cancelRequestedAt !== null) throw linkInactive("canceled");
}
