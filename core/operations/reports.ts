import { reportBlobKey } from "../domain/blob-keys.ts";
import { isTerminal } from "../domain/state-machine.ts";
import { currentReportJson } from "../domain/stored-report.ts";
import { applyReview } from "../domain/review.ts";
import type { Report } from "../schemas/report.ts";
import { ApiError } from "../domain/errors.ts";
import type { BlobStore } from "../ports/blob-store.ts";
import type { InspectionRecord } from "../ports/records.ts";
import type { Services } from "../runtime/services.ts";

/**
 * Stores an inspection's report as a blob, once. The controller writes it before the move to
 * `completed`, as a separate write: a crash between the two leaves the report and the inspection
 * still processing, and the retry, whose report is a new one (new finding ids, a new time), finds
 * the first stored and keeps it, so no client ever sees two reports of one inspection. Answers the
 * report that is stored.
 */
export async function storeReport<R>(blobs: BlobStore, inspectionId: string, report: R): Promise<R> {
  const key = reportBlobKey(inspectionId);
  if (await blobs.create(key, Buffer.from(JSON.stringify(report)), "application/json")) return report;
  const first = await blobs.get(key);
  // A create under way elsewhere holds the key (S3's 409): the retry finds it written.
  if (!first) throw new Error(`the report of ${inspectionId} is being written by another writer`);
  return JSON.parse(first.toString("utf8")) as R;
}

/**
 * The stored report of an inspection, as the JSON text it was stored as, or the 409 that says why
 * there is none. Every form of the report (JSON, PDF, the dashboard's) asks here, so they all refuse
 * alike.
 */
export async function completedReport(s: Pick<Services, "blobs">, inspection: InspectionRecord): Promise<string> {
  // Canceled, expired and failed are terminal without a report: waiting would never help.
  if (isTerminal(inspection.status) && inspection.status !== "completed") {
    throw new ApiError("report_unavailable", `The inspection is ${inspection.status}, so it will never have a report.`);
  }
  const report = inspection.status === "completed" ? await s.blobs.get(reportBlobKey(inspection.id)) : null;
  if (!report)
    throw new ApiError(
      "report_not_ready",
      `The report is not ready: the inspection is ${inspection.status}; it is ready once the inspection is completed.`,
    );
  const current = withVehicle(currentReportJson(report.toString("utf8")), inspection);
  return inspection.review ? JSON.stringify(applyReview(JSON.parse(current) as Report, inspection.review)) : current;
}

/**
 * The report with the make, model and year the inspection has now. A report is stored once, with
 * the vehicle as it was then, and a VIN decode that ended after it (recordVehicle: the decode ran
 * past the create's budget, or was tried again after a restart) is in the inspection only, so a
 * report stored without them takes them from there. Only such a report is parsed: its text holds
 * `"make":null` (the only key of that name; a string holding it has its quotes escaped).
 */
function withVehicle(json: string, inspection: InspectionRecord): string {
  if (inspection.make === null || !json.includes('"make":null')) return json;
  const report = JSON.parse(json) as Report;
  if (report.vehicle.make !== null) return json;
  report.vehicle = { ...report.vehicle, make: inspection.make, model: inspection.model, year: inspection.year };
  return JSON.stringify(report);
}

/** The report as the models made it, before any review: what a review is made against. */
export async function modelReport(s: Pick<Services, "blobs">, inspection: InspectionRecord): Promise<Report> {
  return JSON.parse(await completedReport(s, { ...inspection, review: null })) as Report;
}
