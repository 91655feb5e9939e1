import { expect } from "vitest";
import { REQUIRED_ANGLES } from "../../core/schemas/capture.ts";
import { carPhotos } from "./photos.ts";
import { type ServiceApi, VALID_VIN } from "./service.ts";
import { until } from "./webhook-receiver.ts";

/**
 * One customer's capture, for every test that needs photos sent: create → (open) → a photo per
 * angle → (close-ups) → (confirm the VIN) → submit → wait. `walkaround` does it all; its steps are
 * exported for the tests that do something between them (damage a stored photo, race a retake).
 */

/** An inspection made over the API: its id, its capture token and the base of its capture API (/capture/v1/<token>). */
export type Made = { id: string; token: string; base: string };

/** The capture API's base for a capture_url (…/c/<token>), on `on` (another replica) or the link's own origin. */
export function captureBase(captureUrl: string, on?: string): { token: string; base: string } {
  const token = captureUrl.split("/c/")[1]!;
  return { token, base: `${on ?? new URL(captureUrl).origin}/capture/v1/${token}` };
}

/** Creates an inspection of VALID_VIN (unless `extra` names another vehicle) and expects 201. */
export async function create(svc: ServiceApi, key: string, extra: Record<string, unknown> = {}): Promise<Made> {
  const res = await svc.api(key, "/v1/inspections", { method: "POST", json: { vehicle: { vin: VALID_VIN }, ...extra } });
  expect(res.status, await res.clone().text()).toBe(201);
  const made = (await res.json()) as { id: string; capture_url: string };
  return { id: made.id, ...captureBase(made.capture_url, svc.url) };
}

const plain = carPhotos(REQUIRED_ANGLES.length);

export type PhotoOptions = {
  /** The angles photographed, in order: the default walkaround's required ones (the exterior and the VIN) unless told. */
  angles?: readonly string[];
  /**
   * The photo for each angle, by its place in `angles`: real car photos (the first of car-parts'
   * test photos) unless told. A second walkaround of the same photos in one account is one of
   * photos sent before (its review says photos_reused): pass freshPhotos() where the review matters.
   */
  photos?: readonly Buffer[] | ((angle: string, i: number) => Buffer);
  /** Photos taking the place of those of their angles. */
  over?: { angle: string; bytes: Buffer }[];
  /** Open the session first, as the page does (the inspection moves to in_progress). */
  open?: boolean;
  /** Close-ups sent after the walkaround, each in its slot n, of its part where named. */
  closeups?: { n: number; part?: string; bytes: Buffer }[];
};

/** Sends each angle's photo (and the close-ups), expecting 200 for each: the answers, by angle and by `closeup-<n>`. */
export async function photograph(m: { base: string }, o: PhotoOptions = {}): Promise<Record<string, any>> {
  if (o.open) expect((await fetch(m.base)).status).toBe(200);
  const answers: Record<string, any> = {};
  const photo = (angle: string, i: number) =>
    o.over?.find((x) => x.angle === angle)?.bytes ?? (typeof o.photos === "function" ? o.photos(angle, i) : (o.photos ?? plain)[i]!);
  const put = async (path: string, bytes: Buffer, name: string) => {
    const res = await fetch(`${m.base}${path}`, { method: "PUT", body: bytes, headers: { "content-type": "image/jpeg" } });
    const body = await res.text();
    expect(res.status, `${name}: ${body}`).toBe(200);
    answers[name] = JSON.parse(body);
  };
  for (const [i, angle] of (o.angles ?? REQUIRED_ANGLES).entries()) await put(`/photos/${angle}`, photo(angle, i), angle);
  for (const c of o.closeups ?? []) await put(`/closeups/${c.n}${c.part ? `?part=${c.part}` : ""}`, c.bytes, `closeup-${c.n}`);
  return answers;
}

/** Confirms the VIN the customer read (VALID_VIN unless told), expecting 200: the decoded VIN it answers. */
export async function confirmVin(m: { base: string }, vin = VALID_VIN): Promise<any> {
  const res = await fetch(`${m.base}/vin`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ vin }),
  });
  const body = await res.text();
  expect(res.status, body).toBe(200);
  return JSON.parse(body);
}

/** Submits, expecting 202: processing starts. */
export async function submit(m: { base: string }): Promise<void> {
  const res = await fetch(`${m.base}/submit`, { method: "POST" });
  expect(res.status, await res.text()).toBe(202);
}

/** Submits (`submit`) and waits until processing is over: the inspection as processing left it. */
export async function submitAndWait(svc: ServiceApi, key: string, m: { id: string; base: string }): Promise<any> {
  await submit(m);
  return until(
    "processing over",
    async () => (await svc.api(key, `/v1/inspections/${m.id}`)).json(),
    (i: any) => i.status !== "processing",
    90_000,
  );
}

export type WalkaroundOptions = PhotoOptions & {
  /** Confirm the VIN (VALID_VIN, or `vin`): yes unless told. */
  confirmVin?: boolean;
  vin?: string;
  /** Wait for processing to end: yes unless told. Without waiting, the walkaround answers null once submitted. */
  wait?: boolean;
};

/**
 * The whole capture: photos (`photograph`), the VIN confirmed unless told, submitted, and waited
 * for: the inspection as processing left it.
 */
export async function walkaround(svc: ServiceApi, key: string, m: Made, o: WalkaroundOptions = {}): Promise<any> {
  await photograph(m, o);
  if (o.confirmVin !== false) await confirmVin(m, o.vin);
  if (o.wait === false) return submit(m).then(() => null);
  return submitAndWait(svc, key, m);
}
