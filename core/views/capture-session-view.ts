import { logoPath } from "../domain/branding.ts";
import { CLOSEUP, type VehiclePart } from "../domain/closeups.ts";
import type { CaptureSessionState } from "../operations/captures.ts";
import { formatTimestamp } from "../runtime/time.ts";
import type { z } from "zod";
import type { CaptureSession } from "../schemas/capture.ts";

/** The capture session the page (or a native app) reads: the steps with what is done, the close-ups, the account's branding. */
export function captureSessionView(
  { inspection: r, photos: all, branding }: CaptureSessionState,
  publicUrl: string,
): z.infer<typeof CaptureSession> {
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
      logo_url: branding.logo && `${publicUrl}${logoPath(branding.logo.id)}`,
    },
  };
}
