/**
 * `npm run calibrate:severity [-- --datasets DIR]`: the grading rule (core/domain/grading.ts's
 * SEVERITY_TABLE: a damage's severity from the share of its part it covers) checked against the
 * severity labels of car-damage-severity. For every labelled dent and scratch box, the share is
 * measured as processing measures it (the part the parts model finds under it, partOf; without one,
 * a fifth of the photo). On the photos that are not held out, it searches the two thresholds of each
 * type that agree best with the labels (macro F1); on the held-out fifth it prints how the current table
 * and the best one agree. The table stays the single place the rule lives: copy the figures there.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { loadConfig } from "../../core/runtime/config.ts";
import { findingSeverity, PART_SHARE_OF_PHOTO, SEVERITIES, SEVERITY_TABLE, type Severity } from "../../core/domain/grading.ts";
import type { DamageType } from "../../core/domain/damage-types.ts";
import { detectImages } from "../detection/detect-images.ts";
import { partOf } from "../detection/part-of.ts";
import { closeModels, loadModels } from "../detection/load-models.ts";
import { isHeldOut } from "./held-out.ts";
import { readCoco } from "./coco.ts";

type Labelled = { type: "dent" | "scratch"; severity: Severity; share: number; heldOut: boolean };

const { values } = parseArgs({ options: { datasets: { type: "string", default: join(import.meta.dirname, "../../../shared/datasets") } } });
const dir = join(values.datasets!, "car-damage-severity");
const coco = readCoco(dir);
const label = new Map(coco.categories.map((c) => [c.id, c.name]));
const models = await loadModels(loadConfig().models);
if (!models.parts) throw new Error("the calibration needs the parts model (PARTS_MODEL)");
const [parts] = await detectImages(
  [models.parts],
  coco.images.map((im) => readFileSync(join(dir, "images", im.file_name))),
);
const partsOf = new Map(coco.images.map((im, i) => [im.id, parts![i]!.found]));
const imageOf = new Map(coco.images.map((im) => [im.id, im]));

const boxes: Labelled[] = [];
for (const a of coco.annotations) {
  const [severity, type] = (label.get(a.category_id) ?? "").split("-") as [Severity, string];
  if (type !== "dent" && type !== "scratch") continue;
  const im = imageOf.get(a.image_id)!;
  const [x, y, w, h] = a.bbox;
  const box = { x1: x, y1: y, x2: x + w, y2: y + h };
  const part = partOf(box, partsOf.get(a.image_id) ?? [], type);
  const share = part
    ? (w * h) / Math.max((part.x2 - part.x1) * (part.y2 - part.y1), 1e-9)
    : (w * h) / (im.width * im.height * PART_SHARE_OF_PHOTO);
  boxes.push({ type, severity, share, heldOut: isHeldOut(im.file_name) });
}

type Row = { moderateFrom: number; severeFrom: number };
const severityBy = (row: Row, share: number): Severity =>
  share >= row.severeFrom ? "severe" : share >= row.moderateFrom ? "moderate" : "minor";

/**
 * Mean F1 over the severities present: each label counts however rare (plain agreement would
 * favour "always minor" on these counts), and calling a minor scratch moderate costs precision,
 * as over-grading costs a customer.
 */
function macroF1(items: Labelled[], predict: (b: Labelled) => Severity): number {
  const present = SEVERITIES.filter((s) => items.some((b) => b.severity === s));
  return (
    present.reduce((sum, s) => {
      const tp = items.filter((b) => b.severity === s && predict(b) === s).length;
      const labelled = items.filter((b) => b.severity === s).length;
      const predicted = items.filter((b) => predict(b) === s).length;
      return sum + (tp === 0 ? 0 : (2 * tp) / (labelled + predicted));
    }, 0) / present.length
  );
}

function confusion(items: Labelled[], predict: (b: Labelled) => Severity): string {
  const lines = [`    ${"label \\ rule".padEnd(14)}${SEVERITIES.map((s) => s.padStart(9)).join("")}`];
  for (const s of SEVERITIES)
    lines.push(
      `    ${s.padEnd(14)}${SEVERITIES.map((p) => String(items.filter((b) => b.severity === s && predict(b) === p).length).padStart(9)).join("")}`,
    );
  const agree = items.filter((b) => predict(b) === b.severity).length;
  lines.push(
    `    agreement ${agree} of ${items.length} (${((100 * agree) / items.length).toFixed(1)}%), macro F1 ${macroF1(items, predict).toFixed(3)}`,
  );
  return lines.join("\n");
}

const GRID = [0.01, 0.02, 0.03, 0.05, 0.08, 0.1, 0.12, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.8, 1, 1.5, 2, 5];
const best: Partial<Record<DamageType, Row>> = {};
for (const type of ["dent", "scratch"] as const) {
  const train = boxes.filter((b) => b.type === type && !b.heldOut);
  let top = { row: { moderateFrom: SEVERITY_TABLE[type].moderateFrom, severeFrom: SEVERITY_TABLE[type].severeFrom }, score: -1 };
  for (const moderateFrom of GRID) {
    for (const severeFrom of GRID.filter((g) => g > moderateFrom)) {
      const score = macroF1(train, (b) => severityBy({ moderateFrom, severeFrom }, b.share));
      if (score > top.score) top = { row: { moderateFrom, severeFrom }, score };
    }
  }
  best[type] = top.row;
  const shares = (s: Severity) =>
    train
      .filter((b) => b.severity === s)
      .map((b) => b.share)
      .sort((x, y) => x - y);
  const median = (v: number[]) => (v.length ? v[Math.floor(v.length / 2)]!.toFixed(3) : "-");
  console.log(
    `${type}: ${train.length} labelled boxes to calibrate on; median share of the part by label: ${SEVERITIES.map((s) => `${s} ${median(shares(s))} (${shares(s).length})`).join(", ")}`,
  );
  console.log(
    `  best on them: moderate from ${top.row.moderateFrom}, severe from ${top.row.severeFrom} (macro F1 ${top.score.toFixed(3)})`,
  );
}

for (const type of ["dent", "scratch"] as const) {
  const held = boxes.filter((b) => b.type === type && b.heldOut);
  console.log(
    `${type}, held out (${held.length} boxes), the table as it is (moderate from ${SEVERITY_TABLE[type].moderateFrom}, severe from ${SEVERITY_TABLE[type].severeFrom}):`,
  );
  console.log(confusion(held, (b) => findingSeverity(type, b.share)));
  console.log(`${type}, held out, the best thresholds found:`);
  console.log(confusion(held, (b) => severityBy(best[type]!, b.share)));
}
await closeModels(models);
console.log(JSON.stringify({ best }));
