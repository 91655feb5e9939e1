import { expect } from "vitest";
import { EXTERIOR_ANGLES } from "../../core/schemas/capture.ts";
import { carPhotos } from "./photos.ts";
import { submitAndWait, type TestService, VALID_VIN } from "./service.ts";

/** An inspection made over the API, with the base of its capture API (/capture/v1/<token>). */
export type Made = { id: string; base: string };

/** Creates an inspection of VALID_VIN (unless `extra` names another vehicle) and expects 201. */
export async function create(svc: TestService, key: string, extra: Record<string, unknown> = {}): Promise<Made> {
  const res = await svc.api(key, "/v1/inspections", { method: "POST", json: { vehicle: { vin: VALID_VIN }, ...extra } });
  expect(res.status, await res.clone().text()).toBe(201);
  const made = (await res.json()) as { id: string; capture_url: string };
  return { id: made.id, base: `${svc.url}/capture/v1/${made.capture_url.split("/c/")[1]}` };
}

const plain = carPhotos(9);

/**
 * Every exterior angle and the VIN photo (real car photos: the first nine of car-parts' test photos,
 * or `photos`), `over` taking the place of those where given; the VIN confirmed unless told;
 * submitted, and waited for: the inspection as processing left it. A second walkaround of the same
 * photos in one account is one of photos sent before (its review says photos_reused): pass
 * freshPhotos() where the review matters.
 */
export async function walkaround(
  svc: TestService,
  key: string,
  m: Made,
  o: { over?: { angle: string; bytes: Buffer }[]; confirmVin?: boolean; vin?: string; photos?: Buffer[] } = {},
) {
  const angles = [...EXTERIOR_ANGLES, "vin"];
  for (const [i, angle] of angles.entries()) {
    const bytes = o.over?.find((x) => x.angle === angle)?.bytes ?? (o.photos ?? plain)[i]!;
    const put = await fetch(`${m.base}/photos/${angle}`, { method: "PUT", body: bytes, headers: { "content-type": "image/jpeg" } });
    expect(put.status).toBe(200);
  }
  if (o.confirmVin !== false) {
    const vin = await fetch(`${m.base}/vin`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ vin: o.vin ?? VALID_VIN }),
    });
    expect(vin.status).toBe(200);
  }
  return submitAndWait(svc, key, m.base, m.id);
}
