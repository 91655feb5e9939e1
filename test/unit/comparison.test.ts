import { describe, expect, it } from "vitest";
import { compareFindings, reviewedComparison } from "../../core/domain/comparison.ts";
import type { Finding } from "../../core/schemas/report.ts";

type F = Pick<Finding, "id" | "type" | "part" | "severity" | "part_position" | "source" | "review">;
const f = (id: string, type: F["type"], part: string | null, at: [number, number] | null, severity: F["severity"] = "minor"): F => ({
  id,
  type,
  part,
  severity,
  part_position: at,
  source: "model",
  review: null,
});

describe("before and after: which damage is new", () => {
  it("pairs the same damage by part, type and place on the part, whatever the frame; a new one elsewhere on the part is new", () => {
    const before = [f("b1", "dent", "front_left_door", [0.3, 0.5]), f("b2", "scratch", "hood", [0.5, 0.5])];
    const after = [
      // The same dent, photographed from another spot: a little elsewhere on the door.
      f("a1", "dent", "front_left_door", [0.36, 0.55]),
      // A dent on the same door, far from the first.
      f("a2", "dent", "front_left_door", [0.85, 0.4]),
      // A scratch on another part than the baseline's.
      f("a3", "scratch", "trunk", [0.5, 0.5]),
    ];
    expect(compareFindings("insp_b", after, before)).toEqual({
      baseline_inspection: "insp_b",
      new: ["a2", "a3"],
      worsened: [],
      preexisting: [{ finding: "a1", baseline_finding: "b1" }],
      not_seen: ["b2"],
    });
  });

  it("calls a damage that got worse new, naming its baseline finding; one as bad or milder is pre-existing", () => {
    const before = [f("b1", "dent", "hood", [0.5, 0.5], "minor"), f("b2", "scratch", "trunk", [0.2, 0.2], "moderate")];
    const after = [f("a1", "dent", "hood", [0.52, 0.5], "severe"), f("a2", "scratch", "trunk", [0.2, 0.25], "minor")];
    const c = compareFindings("insp_b", after, before);
    expect(c.new).toEqual(["a1"]);
    expect(c.worsened).toEqual([{ finding: "a1", baseline_finding: "b1" }]);
    expect(c.preexisting).toEqual([{ finding: "a2", baseline_finding: "b2" }]);
  });

  it("pairs each baseline finding once, closest first; another type is another damage, suspected damage pairs with any type", () => {
    const before = [f("b1", "dent", "hood", [0.5, 0.5]), f("b2", "damage_suspected", "back_bumper", null)];
    const after = [
      f("far", "dent", "hood", [0.6, 0.6]),
      f("near", "dent", "hood", [0.51, 0.5]),
      f("scratch", "scratch", "hood", [0.5, 0.5]),
      f("typed", "dent", "back_bumper", [0.4, 0.4]),
    ];
    const c = compareFindings("insp_b", after, before);
    expect(c.preexisting).toEqual([
      { finding: "near", baseline_finding: "b1" },
      { finding: "typed", baseline_finding: "b2" },
    ]);
    expect(c.new).toEqual(["far", "scratch"]);
  });

  it("leaves out rejected findings and VIN mismatches; a finding with no part and no angle to match is new", () => {
    const before = [{ ...f("b1", "dent", "hood", [0.5, 0.5]), review: "rejected" as const }];
    const after = [f("a1", "dent", "hood", [0.5, 0.5]), f("vin", "vin_mismatch", null, null), f("nowhere", "scratch", null, null)];
    const c = compareFindings("insp_b", after, before);
    expect(c).toMatchObject({ new: ["a1", "nowhere"], preexisting: [], not_seen: [] });
  });

  it("pairs a finding with no part with one of its type on the photo of the same angle, after the pairings by part", () => {
    const at = (x: F, angle: string) => ({ ...x, angle });
    const before = [at(f("b1", "glass_shatter", null, null), "front"), at(f("b2", "glass_shatter", "front_glass", [0.5, 0.5]), "front")];
    const after = [
      at(f("a1", "glass_shatter", "front_glass", [0.5, 0.45]), "front_left"),
      at(f("a2", "glass_shatter", null, null), "front"),
      at(f("a3", "glass_shatter", null, null), "rear"),
    ];
    const c = compareFindings("insp_b", after, before);
    expect(c.preexisting).toEqual([
      { finding: "a1", baseline_finding: "b2" },
      { finding: "a2", baseline_finding: "b1" },
    ]);
    expect(c.new).toEqual(["a3"]);
  });

  it("as a review leaves it: a rejected finding leaves, a reviewer's finding is new, the models' pairings stand", () => {
    const before = [f("b1", "dent", "hood", [0.5, 0.5])];
    const after = [f("a1", "dent", "hood", [0.5, 0.5]), f("a2", "scratch", "trunk", [0.5, 0.5])];
    const c = compareFindings("insp_b", after, before);
    const reviewed = reviewedComparison(c, [
      after[0]!,
      { ...after[1]!, review: "rejected" },
      { ...f("r1", "dent", "front_left_door", null), source: "reviewer" },
    ]);
    expect(reviewed).toMatchObject({ new: ["r1"], preexisting: [{ finding: "a1", baseline_finding: "b1" }] });
  });
});
