import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EVAL_CLASSES } from "../../inference/evaluation/yolo-folder.ts";
import { DAMAGE_TYPES, damageClass, damageTypeOf } from "../../core/domain/damage-types.ts";
import { DEFAULT_DETECTION_THRESHOLDS, DEFAULT_MODELS } from "../../core/runtime/config.ts";
import { FINDING_TYPES } from "../../core/schemas/report.ts";
import { REVIEWER_TYPES } from "../../core/schemas/review.ts";
import { OnnxDetector } from "../../inference/detection/onnx-detector.ts";
import { DATASETS } from "../helpers/photos.ts";

describe("the damage types, written once", () => {
  it("are the shipped damage model's classes, each with a threshold", async () => {
    const model = await OnnxDetector.load(DEFAULT_MODELS.damage);
    expect(model.names.map(damageTypeOf).sort()).toEqual([...DAMAGE_TYPES].sort());
    expect(Object.keys(DEFAULT_DETECTION_THRESHOLDS).sort()).toEqual([...model.names].sort());
  });

  it("are the evaluation folders' classes, in data.yaml's order", () => {
    const yaml = readFileSync(join(DATASETS, "car-damage/data.yaml"), "utf8");
    const names = JSON.parse(yaml.match(/^names: (\[.*\])$/m)![1]!.replaceAll("'", '"'));
    expect(EVAL_CLASSES).toEqual(names);
  });

  it("name classes both ways, and nothing else", () => {
    expect(damageClass("glass_shatter")).toBe("glass shatter");
    expect(damageTypeOf("lamp broken")).toBe("lamp_broken");
    expect(damageTypeOf("tire_flat")).toBe("tire_flat");
    expect(damageTypeOf("broken part")).toBeUndefined();
    expect(damageTypeOf("wheel")).toBeUndefined();
  });

  it("are what findings and reviewers may name, with the kinds the models add", () => {
    expect(FINDING_TYPES.slice(0, DAMAGE_TYPES.length)).toEqual(DAMAGE_TYPES);
    expect(REVIEWER_TYPES).toEqual([...DAMAGE_TYPES, "broken_part"]);
  });
});
