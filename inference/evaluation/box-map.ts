import { iou, type Box } from "../detection/postprocess.ts";

/**
 * Box mAP as COCO computes it: per class, detections by descending score are matched greedily to
 * the best unmatched ground truth at each IoU threshold (0.50 to 0.95 in steps of 0.05); precision is
 * made monotone and read at 101 recall points. Pure.
 */
export const IOU_THRESHOLDS = Array.from({ length: 10 }, (_, i) => 0.5 + 0.05 * i);

/**
 * How a detector is loaded to be scored, as COCO evaluations run detectors: every box down to score
 * 0.001, NMS at IoU 0.6 (at most 300 an image, postprocess's default).
 */
export const SCORING = { fallback: 0.001, iou: 0.6 } as const;

export type Scored = Box & { score: number; cls: number };
export type Truth = Box & { cls: number };
export type ClassResult = { ap50: number; ap50_95: number; instances: number };

function averagePrecision(hits: { score: number; tp: boolean }[], instances: number): number {
  if (instances === 0) return 0;
  hits.sort((a, b) => b.score - a.score);
  const precision: number[] = [];
  const recall: number[] = [];
  let tp = 0;
  hits.forEach((h, i) => {
    if (h.tp) tp++;
    precision.push(tp / (i + 1));
    recall.push(tp / instances);
  });
  for (let i = precision.length - 2; i >= 0; i--) precision[i] = Math.max(precision[i]!, precision[i + 1]!);
  let sum = 0;
  for (let r = 0; r <= 100; r++) {
    const at = recall.findIndex((x) => x >= r / 100 - 1e-12);
    sum += at === -1 ? 0 : precision[at]!;
  }
  return sum / 101;
}

/**
 * Detections of class `c`, each marked a true positive when it takes the best still-unmatched ground
 * truth at IoU ≥ `threshold`, in descending score order per image (COCO's greedy matching).
 */
function matchClass(detections: Scored[][], truths: Truth[][], c: number, threshold: number): { score: number; tp: boolean }[] {
  const hits: { score: number; tp: boolean }[] = [];
  detections.forEach((dets, img) => {
    const gts = truths[img]!.filter((g) => g.cls === c);
    const used = new Array<boolean>(gts.length).fill(false);
    for (const d of dets.filter((x) => x.cls === c).sort((a, b) => b.score - a.score)) {
      let best = -1;
      let bestIou = threshold;
      gts.forEach((g, j) => {
        if (used[j]) return;
        const v = iou(d, g);
        if (v >= bestIou) {
          bestIou = v;
          best = j;
        }
      });
      if (best >= 0) used[best] = true;
      hits.push({ score: d.score, tp: best >= 0 });
    }
  });
  return hits;
}

export function boxMap(
  detections: Scored[][],
  truths: Truth[][],
  numClasses: number,
): { map50: number; map50_95: number; perClass: Map<number, ClassResult> } {
  const perClass = new Map<number, ClassResult>();
  for (let c = 0; c < numClasses; c++) {
    const instances = truths.reduce((n, t) => n + t.filter((g) => g.cls === c).length, 0);
    if (instances === 0) continue;
    const aps = IOU_THRESHOLDS.map((threshold) => averagePrecision(matchClass(detections, truths, c, threshold), instances));
    perClass.set(c, { ap50: aps[0]!, ap50_95: aps.reduce((a, b) => a + b, 0) / aps.length, instances });
  }
  const values = [...perClass.values()];
  const mean = (f: (r: ClassResult) => number) => (values.length ? values.reduce((s, r) => s + f(r), 0) / values.length : 0);
  return { map50: mean((r) => r.ap50), map50_95: mean((r) => r.ap50_95), perClass };
}

/**
 * Per class, the score threshold that maximises F1 at IoU 0.5: the product's default operating
 * point for each class, chosen on the validation split.
 */
export function f1Thresholds(
  detections: Scored[][],
  truths: Truth[][],
  numClasses: number,
): Map<number, { threshold: number; f1: number; precision: number; recall: number }> {
  const out = new Map<number, { threshold: number; f1: number; precision: number; recall: number }>();
  for (let c = 0; c < numClasses; c++) {
    const instances = truths.reduce((n, t) => n + t.filter((g) => g.cls === c).length, 0);
    if (instances === 0) continue;
    const hits = matchClass(detections, truths, c, 0.5).sort((a, b) => b.score - a.score);
    let tp = 0;
    let top = { threshold: 1, f1: 0, precision: 0, recall: 0 };
    hits.forEach((h, i) => {
      if (h.tp) tp++;
      const precision = tp / (i + 1);
      const recall = tp / instances;
      const f1 = precision + recall > 0 ? (2 * precision * recall) / (precision + recall) : 0;
      if (f1 > top.f1) top = { threshold: h.score, f1, precision, recall };
    });
    out.set(c, top);
  }
  return out;
}
