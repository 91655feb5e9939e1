import { newId } from "../../core/domain/ids.ts";
import { UNSTARTED } from "../../core/ports/inspection-store.ts";
import type { InspectionRecord } from "../../core/ports/records.ts";
import { DEFAULT_CAPTURE_PLAN } from "../../core/domain/capture-plan.ts";

export function sampleInspection(overrides: Partial<InspectionRecord> = {}): InspectionRecord {
  const now = Date.now();
  return {
    id: newId("insp"),
    accountId: "acct_a",
    livemode: false,
    status: "created",
    reference: null,
    vin: "1HGCM82633A004352",
    make: null,
    model: null,
    year: null,
    notifyUrl: null,
    reviewPolicy: null,
    baselineInspectionId: null,
    capture: DEFAULT_CAPTURE_PLAN,
    expiresAt: now + 3_600_000,
    createdAt: now,
    updatedAt: now,
    ...UNSTARTED,
    ...overrides,
  };
}
