import fp from "fastify-plugin";
import { LOGO_ID, logoBlobKey } from "../../core/domain/branding.ts";
import { CaptureLinks } from "../../core/domain/capture-links.ts";
import { captureLinkState } from "../../core/domain/state-machine.ts";
import {
  checkVin,
  confirmVin,
  openCapture,
  openSession,
  type PhotoPlace,
  submitCapture,
  type UploadedPhoto,
  type UploadTools,
  uploadPhoto,
  type VinCheck,
} from "../../core/operations/captures.ts";
import { PhotoIndex } from "../../core/operations/photo-index.ts";
import type { InspectionRecord } from "../../core/ports/records.ts";
import type { Services } from "../../core/runtime/services.ts";
import { captureSessionView } from "../../core/views/capture-session-view.ts";
import { fingerprintOf, takenAt } from "../photos/fingerprint.ts";
import { ingestPhoto } from "../photos/ingest-photo.ts";

/**
 * The capture operations (core/operations/captures.ts) bound to this process's services and to
 * capture's own photo handling (capture/photos/): what the capture routes call, each throwing
 * ApiError on a client's mistake.
 */
export type Captures = {
  /** The inspection a capture token opens, while its link is active. */
  open(token: string): Promise<InspectionRecord>;
  /** The capture session as the contract shows it (the first open moves a created inspection to in_progress). */
  session(token: string): Promise<ReturnType<typeof captureSessionView>>;
  upload(token: string, place: PhotoPlace, upload: { body: unknown; declaredType: string }): Promise<UploadedPhoto>;
  checkVin(token: string, vin: string): Promise<VinCheck>;
  confirmVin(token: string, vin: string): Promise<VinCheck>;
  submit(token: string): Promise<void>;
  /**
   * Which page a capture link shows (captureLinkState, or "invalid" where no inspection has the
   * token), and the locale its inspection was created with.
   */
  page(token: string): Promise<{ state: ReturnType<typeof captureLinkState> | "invalid"; locale: string | null }>;
  /** An account's logo (core/domain/branding.ts) by its file's id; null for an unknown or malformed id. */
  logo(id: string): Promise<Buffer | null>;
};

declare module "fastify" {
  interface FastifyInstance {
    captures: Captures;
  }
}

/** The `captures` decorator, for the capture routes (capture-routes.ts), which declare it as a dependency. */
export const capturesPlugin = fp<{ services: Services }>(
  async (app, { services: s }) => {
    // One photo index for the app: a new one reads an account's whole log before its first lookup.
    const tools: UploadTools = { ingest: ingestPhoto, fingerprint: fingerprintOf, takenAt, index: new PhotoIndex(s.blobs) };
    app.decorate("captures", {
      open: (token) => openCapture(s, token),
      session: async (token) => captureSessionView(await openSession(s, token), s.config.publicUrl),
      upload: (token, place, upload) => uploadPhoto(s, tools, token, place, upload),
      checkVin: (token, vin) => checkVin(s, token, vin),
      confirmVin: (token, vin) => confirmVin(s, token, vin),
      submit: (token) => submitCapture(s, token),
      page: async (token) => {
        const inspection = await s.inspections.getByCaptureTokenHash(CaptureLinks.hash(token));
        if (!inspection) return { state: "invalid", locale: null };
        return { state: captureLinkState(inspection.status, inspection.expiresAt, s.clock.now()), locale: inspection.capture.locale };
      },
      logo: async (id) => (LOGO_ID.test(id) ? await s.blobs.get(logoBlobKey(id)) : null),
    } satisfies Captures);
  },
  { name: "captures" },
);
