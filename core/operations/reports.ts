import { isTerminal } from "../domain/state-machine.ts";
import { ApiError } from "../errors.ts";
import type { InspectionRecord } from "../ports/records.ts";
import type { Services } from "../services.ts";

/**
 * The stored report of an inspection, as the JSON text it was stored as, or the 409 that says why
 * there is none. Every form of the report (JSON, PDF, the dashboard's) asks here, so they all refuse
 * alike.
 */
export async function completedReport(s: Pick<Services, "inspections">, inspection: InspectionRecord): Promise<string> {
  // Canceled, expired and failed are terminal without a report: waiting would never help.
  if (isTerminal(inspection.status) && inspection.status !== "completed") {
    throw new ApiError("report_unavailable", `The inspection is ${inspection.status}, so it will never have a report.`);
  }
  const report = inspection.status === "completed" ? await s.inspections.getReport(inspection.id) : null;
  if (!report)
    throw new ApiError(
      "report_not_ready",
      `The report is not ready: the inspection is ${inspection.status}; it is ready once the inspection is completed.`,
    );
  return report;
}
