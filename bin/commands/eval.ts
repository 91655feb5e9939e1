import { readFileSync } from "node:fs";
import type { Config } from "../../core/runtime/config.ts";
import { detectCloseups } from "../../inference/detection/detect-closeups.ts";
import { OnnxDetector } from "../../inference/detection/onnx-detector.ts";
import { SCORING, boxMap, f1Thresholds, type Scored, type Truth } from "../../inference/evaluation/box-map.ts";
import { EVAL_CLASSES, readYoloFolder } from "../../inference/evaluation/yolo-folder.ts";

/**
 * `vehicle-inspection eval --data DIR`: the detector over a YOLO-format folder, scored as COCO scores
 * boxes (all detections down to 0.001, at most 300 an image). The photos are looked at as processing
 * looks at a close-up (each also mirrored, the views fused: OnnxDetector's MIRRORED; and through the
 * close-up model too where one is configured, its two views and the damage model's two fused at once:
 * detect-closeups.ts), since the folders it
 * scores (car-damage) are close-ups; `CLOSEUP_MODEL=none` scores the damage model alone. Prints a line per class, then, last, the contract's
 * JSON object.
 */
export async function evaluate(
  config: Config,
  dataDir: string,
  modelPath?: string,
  log: (line: string) => void = console.log,
): Promise<Record<string, unknown>> {
  const path = modelPath ?? config.models.damageModel;
  if (!path) throw new Error("no damage model is configured (DAMAGE_MODEL)");
  // Every box down to SCORING's floor, through NMS at the product's overlap (OnnxDetector's
  // default, 0.5), not SCORING's 0.6: the mAP of what processing gives (both figures in the damage model's card).
  const model = await OnnxDetector.load(path, { provider: config.models.provider, fallback: SCORING.fallback });
  // The close-up model where one is configured: processing fuses its boxes with the damage model's on close-ups.
  const closeupPath = config.models.closeupModel;
  const closeup = closeupPath ? await OnnxDetector.load(closeupPath, { provider: config.models.provider }) : null;
  // Model classes are matched to the folder's classes by name.
  const toEval = model.names.map((n) => EVAL_CLASSES.indexOf(n.replace(/_/g, " ")));
  const images = readYoloFolder(dataDir);
  const detections: Scored[][] = [];
  const truths: Truth[][] = [];
  const t0 = performance.now();
  const bytes = images.map((img) => readFileSync(img.image));
  const { damage: results } = await detectCloseups({ damage: model, closeup, parts: null }, bytes, { bytes });
  const inferenceMs = performance.now() - t0;
  images.forEach((img, j) => {
    const {
      found,
      lb: { width, height },
    } = results[j]!;
    detections.push(found.filter((d) => toEval[d.cls]! >= 0).map((d) => ({ ...d, cls: toEval[d.cls]! })));
    truths.push(img.boxes.map((b) => ({ cls: b.cls, x1: b.x1 * width, y1: b.y1 * height, x2: b.x2 * width, y2: b.y2 * height })));
  });
  await Promise.all([model.close(), closeup?.close()]);
  log(
    `looked at as close-ups are: each photo also mirrored, the two views fused${closeup ? `, and fused with the close-up model's (${closeupPath})` : ""}`,
  );
  const result = boxMap(detections, truths, EVAL_CLASSES.length);
  const operating = f1Thresholds(detections, truths, EVAL_CLASSES.length);
  const perClass: Record<string, { ap50: number; ap50_95: number; instances: number }> = {};
  const r4 = (v: number) => Math.round(v * 10_000) / 10_000;
  for (const [c, v] of result.perClass) {
    perClass[EVAL_CLASSES[c]!] = { ap50: r4(v.ap50), ap50_95: r4(v.ap50_95), instances: v.instances };
    const op = operating.get(c)!;
    log(
      `${EVAL_CLASSES[c]!.padEnd(14)} instances ${String(v.instances).padStart(5)}  AP50 ${v.ap50.toFixed(3)}  AP50-95 ${v.ap50_95.toFixed(3)}  best F1 ${op.f1.toFixed(3)} at score ${op.threshold.toFixed(3)} (P ${op.precision.toFixed(2)}, R ${op.recall.toFixed(2)})`,
    );
  }
  const summary = {
    images: images.length,
    map50: r4(result.map50),
    map50_95: r4(result.map50_95),
    per_class: perClass,
    ms_per_image: Math.round((inferenceMs / images.length) * 10) / 10,
  };
  log(JSON.stringify(summary));
  return summary;
}
