import pino from "pino";
import { describe, expect, it } from "vitest";
import { MemoryBlobStore } from "../../core/adapters/memory/memory-blob-store.ts";
import { MemoryInspectionStore } from "../../core/adapters/memory/memory-inspection-store.ts";
import { MemoryState } from "../../core/adapters/memory/memory-state.ts";
import { reportBlobKey } from "../../core/domain/blob-keys.ts";
import { findInspection } from "../../core/operations/inspections.ts";
import { completedReport } from "../../core/operations/reports.ts";
import type { Services } from "../../core/runtime/services.ts";
import type { DecodedVehicle, VinLookup } from "../../core/vin/vin-decoder.ts";
import { sampleInspection } from "../contract/fixtures.ts";

const ACCORD = { make: "Honda", model: "Accord", year: 2003 };
const UNKNOWN = { make: null, model: null, year: null };
const scope = { accountId: "acct_a", livemode: false };

/** A stored report as the controller writes it, of an inspection whose VIN was not decoded yet. */
const storedReport = (inspectionId: string) => ({
  object: "report",
  inspection_id: inspectionId,
  vehicle: { vin: "1HGCM82633A004352", vin_confirmed: null, vin_observed: null, ...UNKNOWN },
  summary: { findings: 0, grade: "none", needs_review: false, new_findings: null },
  photos: [],
  findings: [],
  comparison: null,
  integrity: { same_vehicle: "unknown", inconsistent_photos: [], reused_photos: [] },
});

/** The services these operations use: an inspection store and blobs in memory, and a VIN decoder the test answers. */
function setup(lookup: (vin: string) => Promise<VinLookup>) {
  const inspections = new MemoryInspectionStore(new MemoryState());
  const blobs = new MemoryBlobStore();
  const looked: string[] = [];
  const s = {
    inspections,
    blobs,
    log: pino({ level: "silent" }),
    vin: {
      lookup: (vin: string) => {
        looked.push(vin);
        return lookup(vin);
      },
      decode: async (vin: string) => (await lookup(vin)).vehicle,
    },
  } as unknown as Services;
  return { s, inspections, blobs, looked };
}

describe("a VIN decoded after the create's answer", () => {
  it("is in the report when it was recorded after the report was stored, which stays as it was written", async () => {
    const { s, inspections, blobs } = setup(async () => ({ vehicle: ACCORD, later: null }));
    const r = sampleInspection({ status: "completed" });
    await inspections.create(r, "token-hash", () => ({ id: "evt_1", type: "inspection.created", data: "{}" }));
    const stored = JSON.stringify(storedReport(r.id));
    await blobs.create(reportBlobKey(r.id), Buffer.from(stored));
    expect(JSON.parse(await completedReport(s, r)).vehicle).toMatchObject(UNKNOWN);
    // The decode that ran past the create's budget ends after completion (recordVehicleLater).
    await inspections.recordVehicle(r.id, ACCORD);
    const after = (await inspections.getById(r.id))!;
    // Before, the report kept the vehicle of the moment it was built: make and model null for good.
    expect(JSON.parse(await completedReport(s, after)).vehicle).toEqual({
      vin: "1HGCM82633A004352",
      vin_confirmed: null,
      vin_observed: null,
      ...ACCORD,
    });
    expect((await blobs.get(reportBlobKey(r.id)))!.toString()).toBe(stored);
  });

  it("is decoded again when the inspection is read without it (the process that ran the decode stopped first), and recorded", async () => {
    const { s, inspections, looked } = setup(async () => ({ vehicle: ACCORD, later: null }));
    // What a process stopped mid-decode leaves: the VIN, and no make, model or year.
    const r = sampleInspection();
    await inspections.create(r, "token-hash", () => ({ id: "evt_1", type: "inspection.created", data: "{}" }));
    // Before, a read answered what was stored, nulls, and nothing ever decoded the VIN again. The
    // read answers what is stored (it never waits for the decoder) and decodes in the background.
    expect(await findInspection(s, scope, r.id)).toMatchObject({ make: null });
    await expect.poll(async () => inspections.getById(r.id)).toMatchObject(ACCORD);
    // Recorded, a read has it from the store, without asking the decoder.
    expect(await findInspection(s, scope, r.id)).toMatchObject(ACCORD);
    expect(looked).toEqual([r.vin]);
  });

  it("a decode again past the budget is recorded when it ends; a VIN the decoder does not know writes nothing", async () => {
    let end: (v: DecodedVehicle) => void = () => {};
    const later = new Promise<DecodedVehicle>((resolve) => {
      end = resolve;
    });
    const { s, inspections } = setup(async (vin) =>
      vin === "WVWZZZ1JZXW000001" ? { vehicle: UNKNOWN, later: null } : { vehicle: UNKNOWN, later },
    );
    const slow = sampleInspection();
    const unknown = sampleInspection({ vin: "WVWZZZ1JZXW000001" });
    for (const r of [slow, unknown])
      await inspections.create(r, `token-${r.id}`, () => ({ id: `evt_${r.id}`, type: "inspection.created", data: "{}" }));
    expect(await findInspection(s, scope, slow.id)).toMatchObject(UNKNOWN);
    end(ACCORD);
    await expect.poll(async () => inspections.getById(slow.id)).toMatchObject(ACCORD);
    expect(await findInspection(s, scope, unknown.id)).toEqual(unknown);
    expect(await inspections.getById(unknown.id)).toEqual(unknown);
  });
});
