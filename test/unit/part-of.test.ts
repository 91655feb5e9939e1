import { describe, expect, it } from "vitest";
import type { Detected } from "../../inference/detection/onnx-detector.ts";
import { partOf } from "../../inference/detection/part-of.ts";

const part = (name: string, x1: number, y1: number, x2: number, y2: number, score = 0.8): Detected => ({
  name,
  x1,
  y1,
  x2,
  y2,
  score,
  cls: 0,
});

describe("partOf", () => {
  // A side view: the front door beside and above the front wheel, whose box reaches over the door's lower edge.
  const door = part("front_left_door", 100, 100, 300, 230);
  const wheel = part("wheel", 240, 200, 360, 320);

  it("puts a small damage at the bottom of a door on the door, though most of it lies in the overlapping wheel box", () => {
    // All of it in the wheel's box, three quarters in the door's, its centre in the box's corner (the wheel arch).
    const damage = { x1: 240, y1: 206, x2: 258, y2: 238 };
    for (const type of ["dent", "scratch", undefined] as const) expect(partOf(damage, [door, wheel], type)?.name).toBe("front_left_door");
  });

  it("puts a flat tyre inside the wheel on the wheel, and a scuffed rim there too", () => {
    const tyre = { x1: 260, y1: 280, x2: 340, y2: 318 };
    expect(partOf(tyre, [door, wheel], "tire_flat")?.name).toBe("wheel");
    expect(partOf({ x1: 290, y1: 250, x2: 310, y2: 270 }, [door, wheel], "scratch")?.name).toBe("wheel");
  });

  it("never puts a crack on a wheel", () => {
    expect(partOf({ x1: 290, y1: 250, x2: 310, y2: 270 }, [wheel], "crack")).toBeNull();
  });

  it("puts nothing on the body between the two wheels of a side that one wide wheel box holds", () => {
    const bothWheels = part("wheel", 100, 240, 500, 340);
    expect(partOf({ x1: 290, y1: 280, x2: 310, y2: 300 }, [bothWheels], "dent")).toBeNull();
    expect(partOf({ x1: 140, y1: 280, x2: 160, y2: 300 }, [bothWheels], "dent")?.name).toBe("wheel");
    expect(partOf({ x1: 440, y1: 280, x2: 460, y2: 300 }, [bothWheels], "dent")?.name).toBe("wheel");
  });

  it("gives a damage outside every part no part", () => {
    const damage = { x1: 400, y1: 20, x2: 420, y2: 40 };
    for (const type of ["dent", "tire_flat", "glass_shatter", undefined] as const) expect(partOf(damage, [door, wheel], type)).toBeNull();
  });

  it("puts a damage on the tightest of nested boxes, and a damage that swallows a small part on the part around it", () => {
    const bumper = part("front_bumper", 0, 100, 400, 200);
    const light = part("front_left_light", 20, 110, 80, 150);
    expect(partOf({ x1: 40, y1: 120, x2: 50, y2: 130 }, [bumper, light])?.name).toBe("front_left_light");
    expect(partOf({ x1: 10, y1: 105, x2: 130, y2: 185 }, [bumper, light], "dent")?.name).toBe("front_bumper");
  });

  it("does not let a faint box outweigh a sure one", () => {
    const hood = part("hood", 0, 0, 200, 100, 0.9);
    const faint = part("front_right_light", 0, 0, 160, 100, 0.03);
    expect(partOf({ x1: 90, y1: 40, x2: 110, y2: 60 }, [hood, faint], "scratch")?.name).toBe("hood");
  });
});
