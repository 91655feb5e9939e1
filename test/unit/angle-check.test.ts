import { describe, expect, it } from "vitest";
import { angleOfSides, isWrongAngle, sidesShown } from "../../inference/quality/angle-check.ts";

const parts = (...names: string[]) => names.map((name) => ({ name, score: 0.9 }));

describe("the angle check", () => {
  it("reads the sides a photo shows from its parts; lights do not tell the side, doors and mirrors do", () => {
    expect([...sidesShown(parts("front_bumper", "hood", "front_left_light", "front_right_light"))]).toEqual(["front"]);
    expect([...sidesShown(parts("back_bumper", "tailgate", "back_left_door", "left_mirror"))].sort()).toEqual(["left", "rear"]);
    expect([...sidesShown([{ name: "front_bumper", score: 0.1 }])]).toEqual([]);
  });

  it.each([
    ["rear", ["front_bumper", "hood"], true],
    ["front", ["front_bumper", "hood"], false],
    ["front_left", ["front_bumper", "front_right_door"], true],
    ["front_left", ["front_bumper", "front_left_door"], false],
    ["left", ["back_right_door", "right_mirror"], true],
    // A front photo at a side prompt says nothing against it: both sides, or none, show.
    ["left", ["front_bumper", "front_left_light", "front_right_light"], false],
    // Both the front and the rear show (a long side view): no clear evidence either way.
    ["rear", ["front_bumper", "back_bumper"], false],
    ["rear_right", ["wheel"], false],
  ] as const)("at %s, a photo showing %j is wrong: %s", (angle, names, wrong) => {
    expect(isWrongAngle(angle, sidesShown(parts(...names)))).toBe(wrong);
  });

  it("names the angle a photo answers from its sides", () => {
    expect(angleOfSides(sidesShown(parts("front_bumper", "front_left_door")))).toBe("front_left");
    expect(angleOfSides(sidesShown(parts("back_bumper")))).toBe("rear");
    expect(angleOfSides(sidesShown(parts("right_mirror")))).toBe("right");
    expect(angleOfSides(sidesShown(parts("front_bumper", "back_bumper")))).toBeNull();
  });
});
