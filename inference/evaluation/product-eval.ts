import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { MemoryBlobStore } from "../../core/adapters/memory/memory-blob-store.ts";
import { photoBlobKey } from "../../core/domain/blob-keys.ts";
import type { Config } from "../../core/runtime/config.ts";
import { overallGrade, SEVERITIES, type Grade, type Severity } from "../../core/domain/grading.ts";
import { newId } from "../../core/domain/ids.ts";
import type { BlobStore } from "../../core/ports/blob-store.ts";
import type { Detection, PhotoOutcome, PhotoToInspect } from "../../core/ports/detection-runner.ts";
import { EXTERIOR_ANGLES, type ExteriorAngle } from "../../core/schemas/capture.ts";
import { detectImages } from "../detection/detect-images.ts";
import { detectPhotos, type Models } from "../detection/detect-photos.ts";
import { partOf } from "../detection/part-of.ts";
import { partAccuracy } from "./part-accuracy.ts";
import type { SuggestedCloseup } from "../detection/suggest-closeups.ts";
import { UploadChecker } from "../quality/upload-checker.ts";
import { photoNeedsNoReview, reviewOf } from "../../core/domain/review.ts";
import type { ReviewReason } from "../../core/schemas/report.ts";
import { closeModels, loadModels } from "../detection/load-models.ts";
import type { OnnxDetector } from "../detection/onnx-detector.ts";
import { iou, type Box } from "../detection/postprocess.ts";
import { ANGLE_EVIDENCE_SCORE, angleOfSides, isWrongAngle, sidesShown } from "../quality/angle-check.ts";
import { measureQuality } from "../quality/measure-quality.ts";
import { boxMap, type Scored, type Truth } from "./box-map.ts";
import { foldOf, HELD_OUT_FOLD } from "./held-out.ts";
import { readCoco } from "./coco.ts";

/**
 * The product measured as customers meet it: photos go through the whole pipeline processing runs
 * (quality, vehicle gate, both models at the configured thresholds, part assignment, severity,
 * grading), grouped into inspections of eight exterior photos, as a walkaround is.
 * - clean cars: the car-parts test photos (no visible damage), 12 inspections of 8;
 * - whole cars with damage: the held-out fifth of car-damage-severity (held-out.ts): AP50 of the
 *   findings for dent and scratch, and how their severities agree with the labels;
 * The command (bin/commands/eval-product.ts) adds close-ups: the damage model's box mAP on
 * car-damage/valid, as `eval` prints it.
 */

const INSPECTION_SIZE = EXTERIOR_ANGLES.length;
const CLEAN_INSPECTIONS = 12;
/** The finding types car-damage-severity labels that are also finding types of the product. */
const SEVERITY_TYPES = ["dent", "scratch"] as const;
/** A finding agrees with a label when their boxes overlap this much (AP50's own criterion). */
const MATCH_IOU = 0.5;

/** Each detection with the index of its photo in the walkaround; each photo's suggested close-ups. */
type Inspected = {
  photos: { name: string; width: number; height: number }[];
  detections: (Detection & { photo: number })[];
  grade: Grade;
  /** Whether the report would go to a person (review.ts), and why; the VIN counts as confirmed, as these photos have none. */
  needsReview: boolean;
  reasons: ReviewReason[];
  /** Each photo's outcome of processing (its quality, its damage score), in the walkaround's order. */
  outcomes: (PhotoOutcome | undefined)[];
  suggestions: SuggestedCloseup[][];
};

/** The models and the upload's own checks (upload-checker.ts), which answer each photo with the close-ups it suggests. */
type Pipeline = Models & { uploads: UploadChecker | null };

/** One walkaround: up to eight photos, as processing sees them after upload. */
async function inspect(models: Pipeline, photos: { name: string; bytes: Buffer; width: number; height: number }[]): Promise<Inspected> {
  const blobs: BlobStore = new MemoryBlobStore();
  const id = newId("insp");
  const toInspect: PhotoToInspect[] = [];
  for (const [i, photo] of photos.entries()) {
    const mediaId = newId("med");
    const blobKey = photoBlobKey(id, mediaId);
    await blobs.put(blobKey, photo.bytes, "image/jpeg");
    toInspect.push({ mediaId, angle: EXTERIOR_ANGLES[i % INSPECTION_SIZE]!, blobKey, quality: await measureQuality(photo.bytes) });
  }
  const result = await detectPhotos(blobs, id, toInspect, models);
  const byMedia = new Map(toInspect.map((p, i) => [p.mediaId, i]));
  const detections = result.detections.map((d) => ({ ...d, photo: byMedia.get(d.mediaId)! }));
  const review = reviewOf({ findings: result.detections, photos: result.photos, vinConfirmed: true, policy: "when_unsure" });
  return {
    photos,
    detections,
    grade: overallGrade(result.detections.map((d) => d.severity)),
    needsReview: review.status === "required",
    reasons: review.reasons,
    outcomes: toInspect.map((p) => result.photos.find((o) => o.mediaId === p.mediaId)),
    suggestions: await Promise.all(
      photos.map(async (p, i) => (await models.uploads?.check(EXTERIOR_ANGLES[i % INSPECTION_SIZE]!, p.bytes))?.suggestedCloseups ?? []),
    ),
  };
}

function chunks<T>(items: T[], size: number): T[][] {
  return Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));
}

/** What on a clean inspection's photos made it graded or sent to review: each finding and each photo kept with problems. */
function cleanCarWhy(inspected: Inspected): string {
  const findings = inspected.detections.map(
    (d) => `${inspected.photos[d.photo]!.name} ${d.type} ${d.confidence ?? "-"} on ${d.part ?? "no part"} (${d.severity})`,
  );
  const kept = inspected.outcomes.flatMap((o, i) =>
    o && !photoNeedsNoReview(o.quality, o.damageScore) ? [`${inspected.photos[i]!.name} kept with ${o.quality?.problems.join(", ")}`] : [],
  );
  return [...findings, ...kept].join("; ") || "nothing named";
}

export async function cleanCars(models: Pipeline, dir: string, log: (line: string) => void) {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith(".jpg"))
    .sort()
    .slice(0, CLEAN_INSPECTIONS * INSPECTION_SIZE);
  const photos = files.map((name) => ({ name, bytes: readFileSync(join(dir, name)), width: 0, height: 0 }));
  let photosWithFinding = 0;
  let gradedOrReviewed = 0;
  let reviewed = 0;
  let suggested = 0;
  const reasons: Record<string, number> = {};
  const grades: Grade[] = [];
  const byType: Record<string, number> = {};
  for (const group of chunks(photos, INSPECTION_SIZE)) {
    const inspected = await inspect(models, group);
    photosWithFinding += new Set(inspected.detections.map((d) => d.photo)).size;
    for (const d of inspected.detections) byType[d.type] = (byType[d.type] ?? 0) + 1;
    grades.push(inspected.grade);
    if (inspected.needsReview) reviewed++;
    for (const r of inspected.reasons) reasons[r] = (reasons[r] ?? 0) + 1;
    if (inspected.needsReview || inspected.grade !== "none") {
      gradedOrReviewed++;
      log(
        `  clean inspection ${group[0]!.name}…: ${inspected.grade}, review ${inspected.reasons.join(", ") || "no"}; ${cleanCarWhy(inspected)}`,
      );
    }
    suggested += inspected.suggestions.flat().length;
  }
  const gradedAboveNone = grades.filter((g) => g !== "none").length;
  const share = photosWithFinding / photos.length;
  log(
    `clean cars: ${photosWithFinding} of ${photos.length} photos (${(share * 100).toFixed(1)}%) with a finding; ${gradedAboveNone} of ${grades.length} inspections graded above none (${grades.join(", ")}), ${reviewed} sent to review (reasons ${JSON.stringify(reasons)}), ${gradedOrReviewed} graded or sent to review; ${suggested} close-ups suggested (${(suggested / grades.length).toFixed(2)} an inspection); findings by type ${JSON.stringify(byType)}`,
  );
  return {
    photos: photos.length,
    photos_with_finding: photosWithFinding,
    share_with_finding: round(share),
    inspections: grades.length,
    graded_above_none: gradedAboveNone,
    sent_to_review: reviewed,
    review_reasons: reasons,
    graded_or_sent_to_review: gradedOrReviewed,
    suggested_closeups_per_inspection: round(suggested / grades.length),
    findings_by_type: byType,
  };
}

/**
 * `fold`: which fifth of car-damage-severity (held-out.ts) to measure; the held-out one by default.
 * Another fold is photos the models were trained on: whether a model learned them at all.
 */
export async function wholeCars(models: Pipeline, dir: string, log: (line: string) => void, fold = HELD_OUT_FOLD) {
  const coco = readCoco(dir);
  const label = new Map(coco.categories.map((c) => [c.id, c.name]));
  const images = coco.images.filter((im) => foldOf(im.file_name) === fold).sort((a, b) => a.file_name.localeCompare(b.file_name));
  const truthsOf = new Map<number, (Box & { type: string; severity: string })[]>();
  for (const a of coco.annotations) {
    const [severity, type] = (label.get(a.category_id) ?? "").split("-");
    if (!severity || !type) continue; // the super-category
    const [x, y, w, h] = a.bbox;
    truthsOf.set(a.image_id, [...(truthsOf.get(a.image_id) ?? []), { x1: x, y1: y, x2: x + w, y2: y + h, type, severity }]);
  }
  const detections: Scored[][] = [];
  const truths: Truth[][] = [];
  // Rows: the label's severity; columns: the finding's, or missed.
  const confusion: Record<string, Record<string, number>> = Object.fromEntries(
    SEVERITIES.map((s) => [s, Object.fromEntries([...SEVERITIES, "missed"].map((p) => [p, 0]))]),
  );
  // The product's view of damaged cars: whether a walkaround is graded none with nobody looking,
  // and which photos get any finding, by their worst labelled damage.
  const worstOf = (labels: { severity: string }[]) =>
    labels.reduce((w, l) => (SEVERITIES.indexOf(l.severity as Severity) > SEVERITIES.indexOf(w as Severity) ? l.severity : w), "none");
  const flagged: Record<string, { photos: number; flagged: number }> = {
    minor: { photos: 0, flagged: 0 },
    moderate_or_severe: { photos: 0, flagged: 0 },
  };
  let noneUnreviewed = 0;
  let inspections = 0;
  let suggested = 0;
  const partHits = { photos: 0, suggested: 0, damaged_part_suggested: 0 };
  for (const group of chunks(images, INSPECTION_SIZE)) {
    const photos = group.map((im) => ({
      name: im.file_name,
      bytes: readFileSync(join(dir, "images", im.file_name)),
      width: im.width,
      height: im.height,
    }));
    const inspected = await inspect(models, photos);
    inspections++;
    if (inspected.grade === "none" && !inspected.needsReview) noneUnreviewed++;
    suggested += inspected.suggestions.flat().length;
    const [partsFound] = models.parts
      ? await detectImages(
          [models.parts],
          photos.map((p) => p.bytes),
        )
      : [null];
    group.forEach((im, i) => {
      const found = inspected.detections.filter((d) => d.photo === i);
      const worst = worstOf(truthsOf.get(im.id) ?? []);
      const row = worst === "minor" ? flagged.minor : worst === "none" ? null : flagged.moderate_or_severe;
      if (row) {
        row.photos++;
        if (found.length > 0) row.flagged++;
      }
      // The damaged parts: the parts model's part under each labelled box, as a finding's part is named.
      const damagedParts = new Set((truthsOf.get(im.id) ?? []).flatMap((t) => partOf(t, partsFound?.[i]?.found ?? [])?.name ?? []));
      if (damagedParts.size > 0) {
        partHits.photos++;
        const asked = inspected.suggestions[i] ?? [];
        if (asked.length > 0) partHits.suggested++;
        if (asked.some((s) => damagedParts.has(s.part))) partHits.damaged_part_suggested++;
      }
      const boxes = found.map((d) => ({
        x1: d.bbox[0] * im.width,
        y1: d.bbox[1] * im.height,
        x2: (d.bbox[0] + d.bbox[2]) * im.width,
        y2: (d.bbox[1] + d.bbox[3]) * im.height,
        type: d.type,
        severity: d.severity,
        score: d.confidence,
      }));
      const labelled = truthsOf.get(im.id) ?? [];
      detections.push(boxes.filter((b) => isSeverityType(b.type)).map((b) => ({ ...b, cls: SEVERITY_TYPES.indexOf(b.type as never) })));
      truths.push(labelled.filter((t) => isSeverityType(t.type)).map((t) => ({ ...t, cls: SEVERITY_TYPES.indexOf(t.type as never) })));
      for (const t of labelled.filter((l) => isSeverityType(l.type))) {
        const match = boxes
          .filter((b) => b.type === t.type)
          .map((b) => ({ b, overlap: iou(b, t) }))
          .filter((m) => m.overlap >= MATCH_IOU)
          .sort((x, y) => y.overlap - x.overlap)[0];
        if (SEVERITIES.includes(t.severity as Severity)) confusion[t.severity]![match ? match.b.severity : "missed"]!++;
      }
    });
  }
  const map = boxMap(detections, truths, SEVERITY_TYPES.length);
  const ap50 = Object.fromEntries(
    SEVERITY_TYPES.map((type, c) => [
      type,
      { ap50: round(map.perClass.get(c)?.ap50 ?? 0), instances: map.perClass.get(c)?.instances ?? 0 },
    ]),
  );
  const meanAp50 = round(SEVERITY_TYPES.reduce((sum, type) => sum + ap50[type]!.ap50, 0) / SEVERITY_TYPES.length);
  const matched = SEVERITIES.flatMap((s) => SEVERITIES.map((p) => confusion[s]![p]!)).reduce((a, b) => a + b, 0);
  const agreeing = SEVERITIES.reduce((sum, s) => sum + confusion[s]![s]!, 0);
  log(
    `whole cars (car-damage-severity ${fold === HELD_OUT_FOLD ? "held out" : `fold ${fold}, trained on`}: ${images.length} photos): AP50 dent ${ap50.dent!.ap50.toFixed(3)} (${ap50.dent!.instances}), scratch ${ap50.scratch!.ap50.toFixed(3)} (${ap50.scratch!.instances}); mean ${meanAp50.toFixed(3)}`,
  );
  log(`  severity, label (rows) against finding (columns), dent and scratch matched at IoU ${MATCH_IOU}:`);
  log(`  ${"".padEnd(9)} ${[...SEVERITIES, "missed"].map((p) => p.padStart(8)).join(" ")}`);
  for (const s of SEVERITIES)
    log(`  ${s.padEnd(9)} ${[...SEVERITIES, "missed"].map((p) => String(confusion[s]![p]).padStart(8)).join(" ")}`);
  log(`  agreement on matched findings: ${agreeing} of ${matched}`);
  const shareOf = (r: { photos: number; flagged: number }) => (r.photos ? round(r.flagged / r.photos) : null);
  log(
    `  as inspections: ${noneUnreviewed} of ${inspections} graded none without review; photos flagged (any finding): moderate or severe ${flagged.moderate_or_severe!.flagged} of ${flagged.moderate_or_severe!.photos}, minor only ${flagged.minor!.flagged} of ${flagged.minor!.photos}`,
  );
  log(
    `  suggested close-ups: ${(suggested / inspections).toFixed(2)} an inspection; of ${partHits.photos} photos whose damage lies on a part the parts model finds, ${partHits.suggested} got a suggestion, ${partHits.damaged_part_suggested} naming a damaged part`,
  );
  return {
    fold,
    photos: images.length,
    inspections,
    graded_none_without_review: noneUnreviewed,
    flagged_moderate_or_severe: shareOf(flagged.moderate_or_severe!),
    flagged_minor_only: shareOf(flagged.minor!),
    suggested_closeups_per_inspection: round(suggested / inspections),
    damaged_part_among_suggestions: partHits.suggested ? round(partHits.damaged_part_suggested / partHits.suggested) : null,
    damaged_photos_with_suggestion: partHits.photos ? round(partHits.suggested / partHits.photos) : null,
    ap50,
    mean_ap50: meanAp50,
    severity_confusion: confusion,
    severity_agreement: matched ? round(agreeing / matched) : null,
  };
}

/**
 * The angle check on the car-parts test photos: each photo's own angle comes from its labelled
 * parts (angleOfSides), and the check runs on what the parts model finds. It should pass every photo
 * at its own angle, and flag it at the prompts it contradicts (a front photo sent as the rear).
 */
export async function angleCheck(parts: OnnxDetector, dir: string, log: (line: string) => void, minScore = ANGLE_EVIDENCE_SCORE) {
  const coco = readCoco(dir);
  const label = new Map(coco.categories.map((c) => [c.id, c.name]));
  const labelled = new Map<number, { name: string; score: number }[]>();
  for (const a of coco.annotations)
    labelled.set(a.image_id, [...(labelled.get(a.image_id) ?? []), { name: label.get(a.category_id)!, score: 1 }]);
  const known = coco.images
    .map((im) => ({ im, truth: sidesShown(labelled.get(im.id) ?? []) }))
    .map((x) => ({ ...x, own: angleOfSides(x.truth) }))
    .filter((x): x is typeof x & { own: ExteriorAngle } => x.own !== null);
  const [found] = await detectImages(
    [parts],
    known.map(({ im }) => readFileSync(join(dir, "JPEGImages", im.file_name))),
  );
  let ownFlagged = 0;
  let wrongPrompts = 0;
  let wrongFlagged = 0;
  let sidePredicted = 0;
  known.forEach(({ own, truth }, i) => {
    const shown = sidesShown(found![i]!.found, minScore);
    if (angleOfSides(shown) === own) sidePredicted++;
    if (isWrongAngle(own, shown)) ownFlagged++;
    for (const prompt of EXTERIOR_ANGLES) {
      if (!isWrongAngle(prompt, truth)) continue;
      wrongPrompts++;
      if (isWrongAngle(prompt, shown)) wrongFlagged++;
    }
  });
  log(
    `angle check (car-parts photos whose side their parts tell: ${known.length}): own angle flagged ${ownFlagged} of ${known.length}; contradicting prompts flagged ${wrongFlagged} of ${wrongPrompts}; angle read exactly ${sidePredicted} of ${known.length}`,
  );
  return {
    photos: known.length,
    own_angle_flagged: ownFlagged,
    wrong_prompts: wrongPrompts,
    wrong_prompts_flagged: wrongFlagged,
    angle_read_exactly: sidePredicted,
  };
}

const isSeverityType = (type: string) => (SEVERITY_TYPES as readonly string[]).includes(type);
const round = (v: number) => Math.round(v * 10_000) / 10_000;

/** Clean cars and whole cars through the configured models; close-ups are the damage model's `eval`. */
export async function evaluatePipeline(config: Config, datasets: string, log: (line: string) => void = console.log, fold = HELD_OUT_FOLD) {
  const loaded = await loadModels(config.models);
  if (!loaded.damage) throw new Error("no damage model is configured (DAMAGE_MODEL)");
  const { partsModel, judgeModel } = config.models;
  const uploads = partsModel
    ? new UploadChecker(
        { partsModel, judgeModel },
        {
          onError: (error) => {
            throw error;
          },
        },
      )
    : null;
  const models = { ...loaded, damage: loaded.damage, uploads };
  try {
    const t0 = performance.now();
    const clean = await cleanCars(models, join(datasets, "car-parts/testset/JPEGImages"), log);
    const whole = await wholeCars(models, join(datasets, "car-damage-severity"), log, fold);
    const pipelineS = Math.round((performance.now() - t0) / 100) / 10;
    const angles = models.parts ? await angleCheck(models.parts, join(datasets, "car-parts/testset"), log) : null;
    const parts = models.parts ? await partAccuracy(models.parts, join(datasets, "car-parts/testset"), log) : null;
    return { clean_cars: clean, whole_cars: whole, angle_check: angles, part_accuracy: parts, pipeline_s: pipelineS };
  } finally {
    await Promise.all([closeModels(models), uploads?.close()]);
  }
}
