import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openDatabase, sql } from "../../core/adapters/sqlite/database.ts";
import { SqliteInspectionStore } from "../../core/adapters/sqlite/sqlite-inspection-store.ts";
import { DEFAULT_CAPTURE_PLAN, LOCALE_PATTERN } from "../../core/domain/capture-plan.ts";
import { CaptureInput } from "../../core/schemas/capture-plan.ts";
import { sampleInspection } from "../contract/fixtures.ts";

const issue = (input: unknown) => {
  const result = CaptureInput.safeParse(input);
  return result.success ? null : { path: result.error.issues[0]!.path.join("."), message: result.error.issues[0]!.message };
};

describe("capture at creation", () => {
  it("takes steps in order, each angle once, with at least one exterior angle required", () => {
    const parsed = CaptureInput.parse({
      steps: [{ angle: "dashboard" }, { angle: "left", required: true }, { angle: "vin", required: false }],
    });
    expect(parsed.steps).toEqual([
      { angle: "dashboard", required: true },
      { angle: "left", required: true },
      { angle: "vin", required: false },
    ]);
    expect(issue({ steps: [{ angle: "front" }, { angle: "vin" }, { angle: "front", required: false }] })).toMatchObject({
      path: "steps.2.angle",
    });
    expect(issue({ steps: [{ angle: "dashboard" }, { angle: "front", required: false }] })?.path).toBe("steps");
    expect(issue({ steps: [] })?.path).toBe("steps");
    expect(issue({ steps: [{ angle: "roof" }] })?.path).toBe("steps.0.angle");
    expect(issue({ closeups: "sometimes" })?.path).toBe("closeups");
    expect(issue({ expires_in: 3599 })?.path).toBe("expires_in");
    expect(issue({ expires_in: 30 * 86_400 + 1 })?.path).toBe("expires_in");
    expect(issue({ expires_in: 3600.5 })?.path).toBe("expires_in");
    expect(issue({ expires_in: 3600 })).toBeNull();
    expect(issue({ color: "red" })).not.toBeNull();
  });

  it("takes a locale of a language with a catalogue, with or without a region, in either case, and echoes it canonical", () => {
    for (const [given, stored] of [
      ["de", "de"],
      ["DE-ch", "de-CH"],
      ["pt-br", "pt-BR"],
      ["es-419", "es-419"],
      ["pl", "pl"],
    ]) {
      expect(CaptureInput.parse({ locale: given }).locale).toBe(stored);
    }
    for (const refused of ["ja", "en_US", "en-", "de-Latn-CH", "english", "", "x-de"])
      expect(issue({ locale: refused })?.path).toBe("locale");
    // The document's pattern is what is taken: a tag it allows is never refused for something else.
    expect(new RegExp(LOCALE_PATTERN).test("Nl-be")).toBe(true);
    expect(CaptureInput.parse({ locale: "Nl-be" }).locale).toBe("nl-BE");
  });

  it("reads an inspection stored before capture existed (SQLite: no column value) as the default walkaround", async () => {
    const dir = mkdtempSync(join(tmpdir(), "vi-capture-"));
    const db = openDatabase(dir);
    const r = sampleInspection({ capture: { ...DEFAULT_CAPTURE_PLAN, closeups: "guided", locale: "fr" } });
    await new SqliteInspectionStore(db).create(r, "h", () => ({ id: "evt_1", type: "inspection.created", data: "{}" }));
    sql(db, "UPDATE inspections SET capture = NULL WHERE id = ?").run(r.id);
    const read = await new SqliteInspectionStore(openDatabase(dir)).getById(r.id);
    expect(read!.capture).toEqual(DEFAULT_CAPTURE_PLAN);
  });
});
