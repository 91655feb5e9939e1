import { CaptureLinks } from "../domain/capture-links.ts";
import { eventTypeFor, isCancelable, isTerminal } from "../domain/state-machine.ts";
import { ApiError, notFound } from "../domain/errors.ts";
import { derivedId, newId } from "../domain/ids.ts";
import { type Awaitable, whenReady } from "../ports/awaitable.ts";
import { UNSTARTED } from "../ports/inspection-store.ts";
import type { InspectionRecord, Scope } from "../ports/records.ts";
import type { CreateInspectionBody } from "../schemas/inspection.ts";
import type { Services } from "../runtime/services.ts";
import type { DecodedVehicle } from "../vin/vin-decoder.ts";
import { eventPayload } from "../views/inspection-view.ts";
import { checkNotifyUrl } from "../net/notify-url.ts";
import { awaitController } from "./await-controller.ts";
import { type CapturePlan, DEFAULT_CAPTURE_PLAN } from "../domain/capture-plan.ts";

/**
 * What the /v1 API and the dashboard do alike; each throws ApiError on a client's mistake. The
 * inspection at once where the store answers at once (core/ports/awaitable.ts).
 */
export function findInspection(s: Services, scope: Scope, id: string): Awaitable<InspectionRecord> {
  return whenReady(s.inspections.get(scope, id), (found) => {
    if (!found) throw notFound("inspection", id);
    if (found.make === null) decodeAgain(s, found);
    return found;
  });
}

/**
 * An inspection read without make, model and year has its VIN looked up again, as its create did,
 * in the background (a read never waits for the decoder, which may be cold after a restart): the
 * decode the create waited past may still be running (both share it), or may have died with the
 * process that ran it, which left them null. They are recorded when it ends, for the next read.
 * A VIN that vPIC does not know is a cache hit of the decoder each time, and nothing is written.
 */
function decodeAgain(s: Services, r: InspectionRecord): void {
  void s.vin.lookup(r.vin).then(
    ({ vehicle, later }) => recordVehicleLater(s, r.id, later ?? Promise.resolve(vehicle)),
    () => {}, // the decoder logs its own failures
  );
}

/**
 * Stores a new inspection and its `inspection.created` event; resolves once both are durable.
 *
 * Under an Idempotency-Key the inspection's id is derived from the key (and the account and
 * environment), so the key names one inspection in the store of record itself: a retry whose key's
 * record was lost between the create and its completion (a timeout, a crash, the key store down)
 * finds the inspection its first try made and answers it, rather than making a second.
 */
export async function createInspection(
  s: Services,
  scope: Scope,
  body: CreateInspectionBody,
  idempotencyKey?: string,
): Promise<InspectionRecord> {
  const id = idempotencyKey === undefined ? newId("insp") : idUnder(scope, idempotencyKey);
  if (idempotencyKey !== undefined) {
    const made = await createdUnder(s, scope, body, idempotencyKey);
    if (made) return made;
  }
  if (body.notify_url) checkNotifyUrl(body.notify_url, scope.livemode, s.config.webhooks.allowPrivateTargets);
  if (body.baseline_inspection) await checkBaseline(s, scope, body.baseline_inspection, body.vehicle.vin);
  const { vehicle, later } = await s.vin.lookup(body.vehicle.vin);
  const now = s.clock.now();
  const record: InspectionRecord = {
    id,
    accountId: scope.accountId,
    livemode: scope.livemode,
    status: "created",
    reference: body.reference ?? null,
    vin: body.vehicle.vin,
    ...vehicle,
    notifyUrl: body.notify_url ?? null,
    reviewPolicy: body.review ?? null,
    baselineInspectionId: body.baseline_inspection ?? null,
    capture: planOf(body),
    expiresAt: now + lifetimeMs(s, body),
    createdAt: now,
    updatedAt: now,
    ...UNSTARTED,
  };
  try {
    await s.inspections.create(record, CaptureLinks.hash(s.captureLinks.token(id)), (r) => {
      const eventId = newId("evt");
      return { id: eventId, type: eventTypeFor(r.status), data: eventPayload(eventId, eventTypeFor(r.status), r, s.config.publicUrl) };
    });
  } catch (error) {
    // Two tries under one key at once: the store took the other's; answer it.
    const made = idempotencyKey === undefined ? null : await s.inspections.get(scope, id);
    if (!made) throw error;
    return sameRequest(made, body);
  }
  if (later) recordVehicleLater(s, id, later);
  return record;
}

/**
 * A decode that ran past the create's budget (a cold decoder, a busy machine) is not lost: the
 * inspection is answered without make, model and year, and they are recorded once the decode ends,
 * so later reads, the report and the PDF have them. A process that stops first leaves them null
 * until the inspection is next read (findInspection decodes it again).
 */
function recordVehicleLater(s: Services, id: string, later: Promise<DecodedVehicle>): void {
  later
    .then((vehicle) => (vehicle.make === null ? undefined : s.inspections.recordVehicle(id, vehicle)))
    .catch((err) => s.log.warn({ err, inspection: id }, "the vehicle decoded from the VIN could not be recorded"));
}

/** What `capture` asks for, the defaults filled in: what the record keeps, the session and the page read. */
function planOf(body: CreateInspectionBody): CapturePlan {
  const asked = body.capture ?? {};
  return {
    steps: asked.steps ?? DEFAULT_CAPTURE_PLAN.steps,
    closeups: asked.closeups ?? DEFAULT_CAPTURE_PLAN.closeups,
    locale: asked.locale ?? DEFAULT_CAPTURE_PLAN.locale,
  };
}

/** The capture link's lifetime: capture.expires_in, else the deployment's INSPECTION_TTL_HOURS. */
const lifetimeMs = (s: Services, body: CreateInspectionBody) =>
  body.capture?.expires_in === undefined ? s.config.inspectionTtlMs : body.capture.expires_in * 1000;

/**
 * A baseline is a completed inspection of the same account and environment, and of the same vehicle:
 * a comparison with another car's inspection, or with one that has no report, would say nothing.
 * Another account's inspection reads as not there, as everywhere.
 */
async function checkBaseline(s: Services, scope: Scope, id: string, vin: string): Promise<void> {
  const param = "baseline_inspection";
  const baseline = await s.inspections.get(scope, id);
  if (!baseline) throw new ApiError("parameter_invalid", `No inspection ${id} to compare with.`, { param });
  if (baseline.status !== "completed")
    throw new ApiError(
      "parameter_invalid",
      `The baseline inspection is ${baseline.status}; only a completed inspection can be a baseline.`,
      {
        param,
      },
    );
  if (baseline.vin !== vin)
    throw new ApiError(
      "parameter_invalid",
      `The baseline inspection is of another vehicle (VIN ${baseline.vin}); a baseline must be of the same vehicle.`,
      { param },
    );
}

const idUnder = (scope: Scope, idempotencyKey: string) => derivedId("insp", `${scope.accountId}\n${scope.livemode}\n${idempotencyKey}`);

/**
 * The inspection an earlier create under this Idempotency-Key made, if it made one: what a retry
 * answers while that create's key still reads as in flight (its answer was lost with its process).
 * A different request under the key is the contract's 422.
 */
export async function createdUnder(
  s: Services,
  scope: Scope,
  body: CreateInspectionBody,
  idempotencyKey: string,
): Promise<InspectionRecord | null> {
  const made = await s.inspections.get(scope, idUnder(scope, idempotencyKey));
  return made && sameRequest(made, body);
}

/** The inspection a key already names, if the request is the one that made it (else the contract's 422). */
function sameRequest(made: InspectionRecord, body: CreateInspectionBody): InspectionRecord {
  const same =
    made.vin === body.vehicle.vin &&
    made.reference === (body.reference ?? null) &&
    made.notifyUrl === (body.notify_url ?? null) &&
    made.reviewPolicy === (body.review ?? null) &&
    made.baselineInspectionId === (body.baseline_inspection ?? null) &&
    JSON.stringify(made.capture) === JSON.stringify(planOf(body)) &&
    (body.capture?.expires_in === undefined || made.expiresAt - made.createdAt === body.capture.expires_in * 1000);
  if (same) return made;
  throw new ApiError("idempotency_key_reused", "This Idempotency-Key was used with a different request; use a new key for a new request.", {
    param: "Idempotency-Key",
  });
}

/** Records the cancel intent and waits for the controller's verdict; canceling twice is not an error. */
export async function cancelInspection(s: Services, scope: Scope, id: string): Promise<InspectionRecord> {
  const current = await findInspection(s, scope, id);
  if (current.status === "canceled") return current;
  if (!isCancelable(current.status)) throw notCancelable(current);
  // The controller owns status: record the intent, then report its verdict.
  await s.inspections.recordCancelRequested(current.id, s.clock.now());
  const after = await awaitController(s, current.id, (r) => isTerminal(r.status));
  if (after.status === "canceled") return after;
  if (isTerminal(after.status)) throw notCancelable(after);
  throw new ApiError("service_unavailable", "The cancellation is recorded but not yet confirmed; retry the request to see its outcome.");
}

const notCancelable = (r: InspectionRecord) =>
  new ApiError("inspection_not_cancelable", `The inspection is ${r.status} and can no longer be canceled.`);
