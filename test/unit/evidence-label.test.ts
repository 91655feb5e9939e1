import { describe, expect, it } from "vitest";
import { evidenceLabel } from "../../inference/detection/detect-photos.ts";
import { reportWords } from "../../core/views/report-words.ts";

// The label is drawn into the evidence photo, which the PDF and the share page show: it must be in
// the report's language, not the model's class names.
describe("an evidence photo's label", () => {
  const dent = { type: "dent", part: "front_bumper", confidence: 0.87 } as const;

  it("is in the report's language", () => {
    const en = evidenceLabel(dent, reportWords("en"));
    const pl = evidenceLabel(dent, reportWords("pl"));
    const de = evidenceLabel(dent, reportWords("de"));
    expect(en).toBe(`${reportWords("en").damage("dent")} · ${reportWords("en").part("front_bumper")} · 87%`);
    expect(en).not.toContain("_");
    expect(pl).toBe(`${reportWords("pl").damage("dent")} · ${reportWords("pl").part("front_bumper")} · ${reportWords("pl").percent(0.87)}`);
    expect(pl).not.toBe(en);
    expect(de).not.toBe(en);
    expect(de).not.toBe(pl);
  });

  it("leaves out a part it does not know", () => {
    const label = evidenceLabel({ type: "damage_suspected", part: null, confidence: 0.5 }, reportWords("fr"));
    expect(label.split(" · ")).toHaveLength(2);
    expect(label).toContain(reportWords("fr").damage("damage_suspected"));
  });
});
