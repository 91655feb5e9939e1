import type { FastifyRequest } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { photoBlobKey } from "../../core/domain/blob-keys.ts";
import { CaptureLinks } from "../../core/domain/capture-links.ts";
import { captureLinkState, isCaptureOpen } from "../../core/domain/state-machine.ts";
import { ApiError } from "../../core/domain/errors.ts";
import { newId } from "../../core/domain/ids.ts";
import type { InspectionRecord } from "../../core/ports/records.ts";
import { ErrorBody } from "../../core/schemas/common.ts";
import { logoPath } from "../../core/domain/branding.ts";
import { CLOSEUP, type VehiclePart } from "../../core/domain/closeups.ts";
import { requiredAngles } from "../../core/domain/capture-plan.ts";
import {
  type ANGLES,
  CaptureSession,
  CloseupParams,
  CloseupQuery,
  isExterior,
  PHOTO_CONTENT_TYPES,
  PhotoParams,
  PhotoResult,
  SubmitResult,
  type SuggestedCloseup,
  TokenParams,
  VinBody,
  VinResult,
} from "../../core/schemas/capture.ts";
import type { Services } from "../../core/runtime/services.ts";
import { formatTimestamp } from "../../core/runtime/time.ts";
import type { Paint } from "../../core/domain/same-vehicle.ts";
import { PhotoIndex } from "../../core/operations/photo-index.ts";
import { fingerprintOf, takenAt } from "../photos/fingerprint.ts";
import { checkedAsItArrives, ingestPhoto, PHOTO_LIMITS } from "../photos/ingest-photo.ts";

/** How long opening and submitting wait for the controller to apply the move before answering. */
const MOVE_WAIT_MS = 5_000;
const errors = {
  400: ErrorBody,
  404: ErrorBody,
  409: ErrorBody,
  410: ErrorBody,
  413: ErrorBody,
  415: ErrorBody,
  429: ErrorBody,
  500: ErrorBody,
  503: ErrorBody,
};

/**
 * The route's own check of its path parameters and query, run ahead of validation's place in the
 * lifecycle (a preParsing hook): the error is the one validation would raise, so it is answered the
 * same way, and a malformed request is 400 whatever state its link is in (not 410 for a closed one).
 */
function refuseInvalidParams(request: FastifyRequest): void {
  for (const [part, value] of [
    ["params", request.params],
    ["querystring", request.query],
  ] as const) {
    const result = request.getValidationFunction(part)?.(value) as { error?: unknown[] } | boolean | undefined;
    if (result && typeof result === "object" && result.error) {
      throw Object.assign(new Error(`Invalid ${part === "params" ? "path parameters" : "query"}.`), {
        statusCode: 400,
        validation: result.error,
        validationContext: part,
      });
    }
  }
}

/** The media type a request declares, without its parameters. */
const declaredType = (contentType: string | undefined) => (contentType ?? "").split(";")[0]!.trim().toLowerCase();

const linkInactive = (state: string) =>
  new ApiError("capture_link_inactive", `This capture link is no longer active: the inspection is ${state}.`);

/**
 * Whether the inspection takes a photo there (capture at creation): an angle its steps ask for, a
 * close-up unless close-ups are off. A refusal names what it does take, so a native app can correct itself.
 */
function checkPlace(r: InspectionRecord, angle: string): void {
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

/**
 * The capture API: what the hosted page (and native capture apps) use. Authenticated by the capture
 * token alone; usable while the inspection is created or in_progress and before expires_at.
 */
export const captureRoutes =
  (s: Services): FastifyPluginAsyncZod =>
  async (app) => {
    app.addContentTypeParser([...PHOTO_CONTENT_TYPES], { parseAs: "buffer", bodyLimit: PHOTO_LIMITS.maxBytes }, (_request, body, done) =>
      done(null, body),
    );

    const photoIndex = new PhotoIndex(s.blobs);

    const open = async (token: string): Promise<InspectionRecord> => {
      const inspection = await s.inspections.getByCaptureTokenHash(CaptureLinks.hash(token));
      if (!inspection)
        throw new ApiError("resource_missing", "This capture link does not exist; check that it was copied whole.", { param: "token" });
      const state = captureLinkState(inspection.status, inspection.expiresAt, s.clock.now());
      if (state !== "active") throw linkInactive(state);
      return inspection;
    };

    const session = async (r: InspectionRecord) => {
      const [all, branding] = await Promise.all([s.inspections.photos(r.id), s.keys.branding(r.accountId)]);
      const photos = new Map(all.filter((p) => p.slot === null).map((p) => [p.angle, p]));
      const closeups = all.filter((p) => p.angle === CLOSEUP && p.slot !== null).sort((a, b) => a.slot! - b.slot!);
      return {
        inspection_id: r.id,
        status: r.status,
        expires_at: formatTimestamp(r.expiresAt)!,
        vehicle: { vin: r.vin, make: r.make, model: r.model, year: r.year },
        vin_confirmed: r.vinObserved,
        locale: r.capture.locale,
        closeup_policy: r.capture.closeups,
        steps: r.capture.steps.map(({ angle, required }) => ({
          angle,
          required,
          done: photos.has(angle),
          quality: photos.get(angle)?.quality ?? null,
        })),
        closeups: closeups.map((p) => ({ n: p.slot!, part: p.part as VehiclePart | null, media_id: p.mediaId, quality: p.quality })),
        account: {
          display_name: branding.displayName,
          accent_color: branding.accentColor,
          logo_url: branding.logo && `${s.config.publicUrl}${logoPath(branding.logo.id)}`,
        },
      };
    };

    /**
     * Stores an uploaded photo (of an angle, or a close-up in its slot) and answers as the contract
     * says: checked and re-encoded (ingest-photo.ts), its model inputs stored where processing searches
     * it, an exterior photo checked for its angle and for close-ups worth asking for.
     */
    const upload = async (
      request: FastifyRequest,
      token: string,
      place: { angle: string; slot: number | null; part: VehiclePart | null },
    ) => {
      const inspection = await open(token);
      checkPlace(inspection, place.angle);
      if (!Buffer.isBuffer(request.body) || request.body.length === 0) {
        throw new ApiError("parameter_missing", "Send the photo as the request body.", { param: "photo" });
      }
      const photo = await ingestPhoto(request.body, declaredType(request.headers["content-type"]));
      const { angle } = place;
      const now = s.clock.now();
      const mediaId = newId("med");
      const blobKey = photoBlobKey(inspection.id, mediaId);
      // Blobs first, then the row that points at them: a crash in between leaves orphan files, never a dangling row.
      const [, inputs, fingerprint, taken] = await Promise.all([
        s.blobs.put(blobKey, photo.jpeg, "image/jpeg"),
        s.modelInputs.write(inspection.id, { mediaId, angle }, photo.jpeg),
        fingerprintOf(photo.jpeg),
        takenAt(request.body),
      ]);
      let suggested: SuggestedCloseup[] = [];
      let paint: Paint | null = null;
      if (isExterior(angle) && s.uploadChecks) {
        const verdict = await s.uploadChecks.check(angle, photo.jpeg, inputs);
        paint = verdict.paint;
        if (verdict.wrongAngle) photo.quality = { ...photo.quality, passed: false, problems: [...photo.quality.problems, "wrong_angle"] };
        // Where close-ups are off, none is suggested: the page must never ask for what the API refuses.
        if (inspection.capture.closeups !== "off") suggested = verdict.suggestedCloseups;
      }
      // Stored only if the capture is still open now: a submit or cancel may have landed while the photo was ingested.
      const stored = await s.inspections.putPhoto(
        {
          inspectionId: inspection.id,
          ...place,
          mediaId,
          width: photo.width,
          height: photo.height,
          quality: photo.quality,
          tries: 1,
          capturedAt: now,
        },
        {
          id: mediaId,
          accountId: inspection.accountId,
          livemode: inspection.livemode,
          inspectionId: inspection.id,
          kind: "photo",
          blobKey,
          bytes: photo.jpeg.length,
          etag: photo.etag,
          width: photo.width,
          height: photo.height,
          createdAt: now,
        },
      );
      if (!stored.accepted) {
        await Promise.all([s.blobs.delete(blobKey), s.modelInputs.delete(inspection.id, [{ mediaId, angle }])]);
        throw linkInactive(closingState((await s.inspections.getById(inspection.id))!, now));
      }
      // Every photo sent is indexed, retakes too: a picture sent once was sent (core/operations/photo-index.ts).
      await photoIndex.add(inspection, { ...fingerprint, mediaId, inspectionId: inspection.id, takenAt: taken, at: now, paint });
      // Only now that no row points at the replaced photo can its blobs go.
      const { replaced } = stored;
      if (replaced)
        await Promise.all([s.blobs.delete(replaced.blobKey), s.modelInputs.delete(inspection.id, [{ mediaId: replaced.id, angle }])]);
      return {
        media_id: mediaId,
        angle: angle as (typeof ANGLES)[number] | typeof CLOSEUP,
        width: photo.width,
        height: photo.height,
        quality: photo.quality,
        part: place.part,
        suggested_closeups: suggested,
      };
    };

    // The path (a photo's angle, a close-up's slot), the link, then the body's format as its first
    // bytes arrive: none waits for the whole body, and a malformed path is 400 whatever the link's state.
    const checkedFirst = async (request: FastifyRequest, _reply: unknown, payload: Parameters<typeof checkedAsItArrives>[0]) => {
      refuseInvalidParams(request);
      const params = request.params as { token: string; angle?: string };
      checkPlace(await open(params.token), params.angle ?? CLOSEUP);
      const type = declaredType(request.headers["content-type"]);
      // Another Content-Type is refused by the router (415) without reading the body.
      return (PHOTO_CONTENT_TYPES as readonly string[]).includes(type) ? checkedAsItArrives(payload, type) : payload;
    };

    app.get(
      "/capture/v1/:token",
      {
        schema: {
          operationId: "captureSession",
          summary: "The capture session (opens the inspection)",
          tags: ["capture"],
          params: TokenParams,
          response: { 200: CaptureSession, ...errors },
        },
      },
      async (request) => {
        let inspection = await open(request.params.token);
        if (inspection.status === "created") {
          await s.inspections.recordOpened(inspection.id, s.clock.now());
          s.signals.nudgeController(inspection.id);
          inspection = await s.signals.waitFor(
            inspection.id,
            async () => (await s.inspections.getById(inspection.id))!,
            (r) => r.status !== "created",
            MOVE_WAIT_MS,
          );
        }
        return session(inspection);
      },
    );

    app.put(
      "/capture/v1/:token/photos/:angle",
      {
        bodyLimit: PHOTO_LIMITS.maxBytes,
        preParsing: checkedFirst,
        schema: {
          operationId: "capturePhoto",
          summary: "Upload the photo of one angle (a retake replaces it)",
          tags: ["capture"],
          params: PhotoParams,
          response: { 200: PhotoResult, ...errors },
        },
      },
      async (request) => upload(request, request.params.token, { angle: request.params.angle, slot: null, part: null }),
    );

    app.put(
      "/capture/v1/:token/closeups/:n",
      {
        bodyLimit: PHOTO_LIMITS.maxBytes,
        preParsing: checkedFirst,
        schema: {
          operationId: "captureCloseup",
          summary: "Upload close-up n of damage, optionally naming its part (optional; a retake replaces it)",
          tags: ["capture"],
          params: CloseupParams,
          querystring: CloseupQuery,
          response: { 200: PhotoResult, ...errors },
        },
      },
      async (request) =>
        upload(request, request.params.token, { angle: CLOSEUP, slot: request.params.n, part: request.query.part ?? null }),
    );

    app.get(
      "/capture/v1/:token/vin",
      {
        schema: {
          operationId: "captureVinDecode",
          summary: "Decode a VIN for the customer to check, without recording it",
          tags: ["capture"],
          params: TokenParams,
          querystring: VinBody,
          response: { 200: VinResult, ...errors },
        },
      },
      async (request) => {
        const inspection = await open(request.params.token);
        // Normalised and checked by VinBody's Vin.
        const { vin } = request.query;
        return { vin, valid: true, matches_vehicle: vin === inspection.vin, ...(await s.vin.decode(vin)) };
      },
    );

    app.post(
      "/capture/v1/:token/vin",
      {
        schema: {
          operationId: "captureVin",
          summary: "Confirm the VIN read from the vehicle or typed",
          tags: ["capture"],
          params: TokenParams,
          body: VinBody,
          response: { 200: VinResult, ...errors },
        },
      },
      async (request) => {
        const inspection = await open(request.params.token);
        const { vin } = request.body;
        await s.inspections.recordVinObserved(inspection.id, vin);
        const decoded = await s.vin.decode(vin);
        return { vin, valid: true, matches_vehicle: vin === inspection.vin, ...decoded };
      },
    );

    app.post(
      "/capture/v1/:token/submit",
      {
        schema: {
          operationId: "captureSubmit",
          summary: "Submit the walkthrough for processing",
          tags: ["capture"],
          params: TokenParams,
          response: { 202: SubmitResult, ...errors },
        },
      },
      async (request, reply) => {
        const inspection = await open(request.params.token);
        const done = new Set((await s.inspections.photos(inspection.id)).filter((p) => p.slot === null).map((p) => p.angle));
        const missing = requiredAngles(inspection.capture).filter((a) => !done.has(a));
        if (missing.length) throw new ApiError("capture_incomplete", `Photos are still missing for: ${missing.join(", ")}.`);
        const now = s.clock.now();
        if (inspection.status === "created") await s.inspections.recordOpened(inspection.id, now);
        await s.inspections.recordSubmitRequested(inspection.id, now);
        s.signals.nudgeController(inspection.id);
        const after = await s.signals.waitFor(
          inspection.id,
          async () => (await s.inspections.getById(inspection.id))!,
          (r) => !isCaptureOpen(r.status),
          MOVE_WAIT_MS,
        );
        if (!isCaptureOpen(after.status) && after.status !== "processing" && after.status !== "completed" && after.status !== "failed")
          throw linkInactive(after.status);
        // Not moved yet (no controller leads this moment: a failover): the submit intent is durable and
        // the next leader processes it, so the answer does not wait for one. Only a cancel recorded
        // first wins over it (the controller's rule), and then the link is closed.
        if (isCaptureOpen(after.status) && after.cancelRequestedAt !== null) throw linkInactive("canceled");
        return reply.code(202).send({ status: "processing" as const });
      },
    );
  };
