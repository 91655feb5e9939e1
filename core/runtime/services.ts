import type { Logger } from "pino";
import type { Metrics } from "./metrics.ts";
import type { Config } from "./config.ts";
import type { ExteriorAngle, SuggestedCloseup } from "../schemas/capture.ts";
import type { Paint } from "../domain/same-vehicle.ts";
import type { CaptureLinks } from "../domain/capture-links.ts";
import type { BlobStore } from "../ports/blob-store.ts";
import type { EventStore } from "../ports/event-store.ts";
import type { IdempotencyStore } from "../ports/idempotency-store.ts";
import type { ModelInputs, ModelInputStore } from "../ports/model-input-store.ts";
import type { InspectionStore } from "../ports/inspection-store.ts";
import type { KeyStore } from "../ports/key-store.ts";
import type { RateLimitStore } from "../ports/rate-limit-store.ts";
import type { UserStore } from "../ports/user-store.ts";
import type { Signals } from "./signals.ts";
import type { Clock } from "./time.ts";
import type { DecodedVehicle, VinLookup } from "../vin/vin-decoder.ts";

/** Everything a component needs from the outside world, built once at boot (bin/) and passed in. */
export type Services = {
  config: Config;
  clock: Clock;
  log: Logger;
  inspections: InspectionStore;
  events: EventStore;
  keys: KeyStore;
  users: UserStore;
  idempotency: IdempotencyStore;
  /**
   * Rate-limit counters: `requests` for the per-key, capture and sign-in limits (counted on every
   * request), `failedAuth` for failed authentications (counted, and read, on failures only).
   */
  rateLimits: { requests: RateLimitStore; failedAuth: RateLimitStore };
  blobs: BlobStore;
  /** VIN decoding within a time budget (core/vin/vin-decoder.ts); `lookup` also hands over a decode that ran past it. */
  vin: { decode(vin: string): Promise<DecodedVehicle>; lookup(vin: string): Promise<VinLookup> };
  captureLinks: CaptureLinks;
  /** Keys for what the service signs besides capture links: dashboard cookies, shared report links. */
  signingKeys: { cookies: Buffer; shareLinks: Buffer };
  signals: Signals;
  /** This process's Prometheus metrics (core/runtime/metrics.ts), served at /metrics. */
  metrics: Metrics;
  /** Searched photos scaled for the configured models: written on upload, read by processing, deleted once settled. */
  modelInputs: ModelInputStore;
  /**
   * The model checks on an exterior photo's upload (inference/quality/upload-checker.ts): whether it
   * shows the side its angle asks for (null where the check could not run), the close-ups worth
   * asking for, and the vehicle's paint (core/domain/same-vehicle.ts); null without a parts model.
   * `inputs`: the photo's pixels the upload already scaled for the models' sizes, so it needs no decode.
   */
  uploadChecks: {
    check(
      angle: ExteriorAngle,
      jpeg: Buffer,
      inputs?: ModelInputs | null,
    ): Promise<{ wrongAngle: boolean | null; suggestedCloseups: SuggestedCloseup[]; paint: Paint | null }>;
  } | null;
};
