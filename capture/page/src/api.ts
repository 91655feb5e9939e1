import type { VehiclePart } from "../../../core/domain/closeups.ts";
import type {
  CaptureSession,
  PhotoResult as ServerPhotoResult,
  SubmitResult,
  SuggestedCloseup,
  VinResult,
} from "../../../core/schemas/capture.ts";
import type { UploadQuality } from "../../../core/schemas/report.ts";
import type { MessageKey } from "./i18n.ts";

// The capture API's bodies are the zod schemas' types (core/schemas/capture.ts), imported as types
// only, so the page bundles no zod; what the page narrows is said where it does.
export type { SubmitResult, SuggestedCloseup, VehiclePart, VinResult };

/**
 * A photo's quality as the page is told it on upload: only the problems measured then, each with a
 * message in the catalogues; processing's (too_small, unreadable, no_vehicle) come after the page is done.
 */
export type Quality = UploadQuality;
type WithQuality<T extends { quality: unknown }> = Omit<T, "quality"> & { quality: Quality | Extract<T["quality"], null> };
export type Step = WithQuality<CaptureSession["steps"][number]>;
/** A close-up taken, in its slot n. */
export type Closeup = WithQuality<CaptureSession["closeups"][number]>;
export type Session = Omit<CaptureSession, "steps" | "closeups"> & { steps: Step[]; closeups: Closeup[] };
export type PhotoResult = WithQuality<ServerPhotoResult>;

/** A failure the server explained: its code and message from the contract's error body. */
export class CaptureApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** The link stopped being usable (canceled, expired, submitted elsewhere): the page shows its end state. */
export const isInactive = (e: unknown) => e instanceof CaptureApiError && (e.status === 410 || e.status === 404);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const RETRY_DELAYS_MS = [1000, 2000, 4000, 8000, 15000];

/**
 * The capture API of the contract, authenticated by the token in the page's URL. Requests that fail
 * on the way (no connection, 5xx, 429) are retried with backoff; `onRetry` tells the page, so a
 * customer on a poor connection sees that it is still trying.
 */
export class CaptureApi {
  readonly #base: string;
  onRetry: (seconds: number) => void = () => {};

  constructor(token: string) {
    this.#base = `/capture/v1/${encodeURIComponent(token)}`;
  }

  async #request<T>(path: string, init: RequestInit = {}): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      let retryable: boolean;
      try {
        const res = await fetch(this.#base + path, { ...init, credentials: "omit", cache: "no-store" });
        const body = res.status === 204 ? null : await res.json().catch(() => null);
        if (res.ok) return body as T;
        const error = new CaptureApiError(res.status, body?.error?.code ?? "unknown", body?.error?.message ?? res.statusText);
        retryable = res.status >= 500 || res.status === 429 || res.status === 408;
        if (!retryable || attempt >= RETRY_DELAYS_MS.length) throw error;
      } catch (error) {
        if (error instanceof CaptureApiError) throw error;
        if (attempt >= RETRY_DELAYS_MS.length) throw error;
      }
      const delay = RETRY_DELAYS_MS[attempt]!;
      this.onRetry(Math.round(delay / 1000));
      await sleep(delay);
    }
  }

  session(): Promise<Session> {
    return this.#request("");
  }

  upload(angle: string, photo: Blob): Promise<PhotoResult> {
    return this.#request(`/photos/${angle}`, { method: "PUT", body: photo, headers: { "content-type": "image/jpeg" } });
  }

  /** Close-up n (a retake of slot n replaces it), of `part` where the customer named one. */
  uploadCloseup(n: number, part: VehiclePart | null, photo: Blob): Promise<PhotoResult> {
    const query = part ? `?part=${encodeURIComponent(part)}` : "";
    return this.#request(`/closeups/${n}${query}`, { method: "PUT", body: photo, headers: { "content-type": "image/jpeg" } });
  }

  /** Decodes without recording: what the customer sees before confirming. */
  decodeVin(vin: string): Promise<VinResult> {
    return this.#request(`/vin?vin=${encodeURIComponent(vin)}`);
  }

  confirmVin(vin: string): Promise<VinResult> {
    return this.#request("/vin", { method: "POST", body: JSON.stringify({ vin }), headers: { "content-type": "application/json" } });
  }

  submit(): Promise<SubmitResult> {
    return this.#request("/submit", { method: "POST" });
  }
}

export const problemMessage = (problem: Quality["problems"][number]): MessageKey => `check.${problem}`;
