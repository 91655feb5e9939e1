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

/** A finding on a photo of that angle ("closeup" for a close-up). */
const at = (x: F, angle: string) => ({ ...x, angle });

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

  it("calls a damage two grades worse, or broken since, new, naming its baseline finding; one grade is a photo's noise", () => {
    const before = [
      f("b1", "dent", "hood", [0.5, 0.5], "minor"),
      f("b2", "scratch", "trunk", [0.2, 0.2], "minor"),
      f("b3", "dent", "front_left_door", [0.5, 0.5], "minor"),
    ];
    const after = [
      f("a1", "dent", "hood", [0.52, 0.5], "severe"),
      f("a2", "scratch", "trunk", [0.2, 0.25], "moderate"),
      f("a3", "broken_part", "front_left_door", [0.45, 0.5], "moderate"),
    ];
    const c = compareFindings("insp_b", after, before);
    expect(c.new).toEqual(["a1", "a3"]);
    expect(c.worsened).toEqual([
      { finding: "a1", baseline_finding: "b1" },
      { finding: "a3", baseline_finding: "b3" },
    ]);
    expect(c.preexisting).toEqual([{ finding: "a2", baseline_finding: "b2" }]);
  });

  it("pairs with a baseline finding of its own type before one of a type it may have grown from: a broken part seen at both visits is not worse", () => {
    // Close-ups carry no place on the part, so both baseline findings are as near; the scratch comes first.
    const before = [
      at(f("b1", "scratch", "hood", null, "severe"), "closeup"),
      at(f("b2", "broken_part", "hood", null, "moderate"), "closeup"),
    ];
    const after = [
      at(f("a1", "broken_part", "hood", null, "moderate"), "closeup"),
      at(f("a2", "scratch", "hood", null, "severe"), "closeup"),
    ];
    const c = compareFindings("insp_b", after, before);
    expect(c.new).toEqual([]);
    expect(c.preexisting).toEqual([
      { finding: "a1", baseline_finding: "b2" },
      { finding: "a2", baseline_finding: "b1" },
    ]);
    // On one part with places, too: the broken part a little further off than the scratch.
    const placed = compareFindings(
      "insp_b",
      [f("a1", "broken_part", "hood", [0.5, 0.5], "moderate")],
      [f("b1", "scratch", "hood", [0.52, 0.5]), f("b2", "broken_part", "hood", [0.6, 0.5], "moderate")],
    );
    expect(placed.preexisting).toEqual([{ finding: "a1", baseline_finding: "b2" }]);
    // Its own type first within a tier only: the scratch it grew from on this part comes before a
    // broken part across the seam on the bumper.
    const tiers = compareFindings(
      "insp_b",
      [f("a1", "broken_part", "hood", [0.5, 0.5], "moderate")],
      [f("b1", "scratch", "hood", [0.5, 0.74]), f("b2", "broken_part", "front_bumper", [0.5, 0.1], "moderate")],
    );
    expect(tiers.worsened).toEqual([{ finding: "a1", baseline_finding: "b1" }]);
    // With no broken part before, the scratch it grew from is named, as before.
    const grown = compareFindings(
      "insp_b",
      [f("a1", "broken_part", "hood", [0.5, 0.5], "moderate")],
      [f("b1", "scratch", "hood", [0.52, 0.5])],
    );
    expect(grown.worsened).toEqual([{ finding: "a1", baseline_finding: "b1" }]);
  });

  it("on close-ups of one part, pairs damage on a panel across dent, scratch and crack; not on other parts or from afar, and not other types", () => {
    const before = [at(f("b1", "dent", "hood", null), "closeup"), at(f("b2", "lamp_broken", "front_left_light", null), "closeup")];
    const after = [
      // The hood's dent, read as a scratch in this take.
      at(f("a1", "scratch", "hood", null), "closeup"),
      // A crack on the trunk: no close-up of the trunk before.
      at(f("a2", "crack", "trunk", null), "closeup"),
      // A scratch on the light: not damage on a panel.
      at(f("a3", "scratch", "front_left_light", null), "closeup"),
    ];
    const c = compareFindings("insp_b", after, before);
    expect(c.preexisting).toEqual([{ finding: "a1", baseline_finding: "b1" }]);
    expect(c.new).toEqual(["a2", "a3"]);
    // From afar, where the place on the part tells damages apart, a scratch is not the dent.
    const afar = compareFindings(
      "insp_b",
      [at(f("a1", "scratch", "hood", [0.5, 0.5]), "front")],
      [at(f("b1", "dent", "hood", [0.5, 0.5]), "front")],
    );
    expect(afar.new).toEqual(["a1"]);
  });

  it("pairs each finding with its nearest baseline finding, which may vouch for two boxes of one damage; another type is another damage", () => {
    const before = [f("b1", "dent", "hood", [0.5, 0.5]), f("b2", "damage_suspected", "back_bumper", null)];
    const after = [
      f("near", "dent", "hood", [0.51, 0.5]),
      f("also", "dent", "hood", [0.6, 0.6]),
      f("scratch", "scratch", "hood", [0.5, 0.5]),
      f("typed", "dent", "back_bumper", [0.4, 0.4]),
    ];
    const c = compareFindings("insp_b", after, before);
    expect(c.preexisting).toEqual([
      { finding: "near", baseline_finding: "b1" },
      { finding: "also", baseline_finding: "b1" },
      { finding: "typed", baseline_finding: "b2" },
    ]);
    expect(c.new).toEqual(["scratch"]);
    expect(c.not_seen).toEqual([]);
  });

  it("pairs across a seam between parts that touch, for the same type, but not across the car", () => {
    const before = [f("b1", "dent", "front_bumper", [0.5, 0.1])];
    const c = compareFindings("insp_b", [f("a1", "dent", "hood", [0.5, 0.95]), f("a2", "dent", "back_left_door", [0.5, 0.5])], before);
    expect(c).toMatchObject({ new: ["a2"], preexisting: [{ finding: "a1", baseline_finding: "b1" }] });
  });

  it("leaves out rejected findings and VIN mismatches; a finding with no part and no angle to match is new", () => {
    const before = [{ ...f("b1", "dent", "hood", [0.5, 0.5]), review: "rejected" as const }];
    const after = [f("a1", "dent", "hood", [0.5, 0.5]), f("vin", "vin_mismatch", null, null), f("nowhere", "scratch", null, null)];
    const c = compareFindings("insp_b", after, before);
    expect(c).toMatchObject({ new: ["a1", "nowhere"], preexisting: [], not_seen: [] });
  });

  it("pairs a finding with one of its type on the photo of the same angle last, whatever their parts; never close-ups", () => {
    const before = [at(f("b1", "glass_shatter", null, null), "front"), at(f("b2", "glass_shatter", "front_glass", [0.5, 0.5]), "front")];
    const after = [
      at(f("a1", "glass_shatter", "front_glass", [0.5, 0.45]), "front_left"),
      at(f("a2", "glass_shatter", null, null), "front"),
      at(f("a3", "glass_shatter", null, null), "rear"),
      at(f("a4", "glass_shatter", "back_glass", [0.5, 0.5]), "front"),
      at(f("a5", "glass_shatter", null, null), "closeup"),
    ];
    const c = compareFindings("insp_b", after, [...before, at(f("b3", "glass_shatter", null, null), "closeup")]);
    expect(c.preexisting).toEqual([
      { finding: "a1", baseline_finding: "b2" },
      { finding: "a2", baseline_finding: "b1" },
      { finding: "a4", baseline_finding: "b1" },
    ]);
    expect(c.new).toEqual(["a3", "a5"]);
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
