import { VEHICLE_PARTS } from "../../core/domain/closeups.ts";
import { SEVERITIES } from "../../core/domain/grading.ts";
import type { Finding, Report } from "../../core/schemas/report.ts";
import { REVIEWER_TYPES } from "../../core/schemas/review.ts";
import { reviewReasonWords } from "../../core/views/review-words.ts";
import { type AddedChoice, FIELD, type FindingChoice, partOptions, type ReviewChoices, stateOf, typeOptions } from "./review-form.ts";

/** A box as the photo's SVG overlay draws it: in the photo's pixels (its viewBox). */
type PixelBox = { x: number; y: number; width: number; height: number };

const px = (bbox: readonly number[] | null, width: number, height: number): PixelBox | null => {
  if (bbox?.length !== 4 || bbox.some((v) => !Number.isFinite(v))) return null;
  const [x, y, w, h] = bbox as [number, number, number, number];
  const r = (v: number) => Math.round(v * 10) / 10;
  return { x: r(x * width), y: r(y * height), width: r(w * width), height: r(h * height) };
};

const angleName = (angle: string) =>
  angle === "vin" ? "VIN" : angle === "closeup" ? "Close-up" : `${angle[0]!.toUpperCase()}${angle.slice(1).replaceAll("_", " ")}`;

/**
 * What review.eta shows: each photo large with the boxes of its findings and, beside it, those
 * findings with their controls and the findings drawn on it; the findings without a photo apart.
 * Photos with something on them come first, in the report's order, then the others to look over.
 */
export function reviewPageView(report: Report, choices: ReviewChoices, mediaUrl: (mediaId: string) => string) {
  const sizes = new Map(report.photos.map((p) => [p.media_id, p]));
  const row = (f: Finding, i: number) => {
    const choice: FindingChoice = choices.findings.get(f.id)!;
    const photo = f.media_id ? sizes.get(f.media_id) : undefined;
    return {
      n: i + 1,
      id: f.id,
      model: f,
      choice,
      state: stateOf(f, choice),
      // A VIN that does not match is confirmed or rejected, never retyped as damage.
      correctable: f.type !== "vin_mismatch",
      typeOptions: typeOptions(f),
      partOptions: partOptions(f),
      box: photo ? px(f.bbox, photo.width, photo.height) : null,
      names: { decision: FIELD.decision(f.id), type: FIELD.type(f.id), part: FIELD.part(f.id), severity: FIELD.severity(f.id) },
    };
  };
  const rows = report.findings.map(row);
  const added = (a: AddedChoice, i: number) => {
    const photo = sizes.get(a.media_id);
    return { ...a, label: i + 1, box: photo ? px(a.bbox, photo.width, photo.height) : null, bboxText: a.bbox.join(",") };
  };
  const addedRows = choices.added.map(added);
  const photos = report.photos.map((p) => ({
    mediaId: p.media_id,
    name: angleName(p.angle),
    part: p.part,
    src: mediaUrl(p.media_id),
    width: p.width,
    height: p.height,
    problems: p.quality.passed ? [] : p.quality.problems,
    findings: rows.filter((r) => r.model.media_id === p.media_id),
    added: addedRows.filter((a) => a.media_id === p.media_id),
  }));
  const marked = (p: (typeof photos)[number]) => p.findings.length + p.added.length > 0;
  return {
    photos: [...photos.filter(marked), ...photos.filter((p) => !marked(p))],
    loose: rows.filter((r) => !r.model.media_id || !sizes.has(r.model.media_id)),
    /** Drawn findings sent back with a photo not of this report (a form made elsewhere): shown, to be removed. */
    looseAdded: addedRows.filter((a) => !sizes.has(a.media_id)),
    findingsCount: rows.length,
    reasons: reviewReasonWords(report.review.reasons),
    vehicle: report.vehicle,
    grade: report.grade,
    note: choices.note,
    options: { types: REVIEWER_TYPES, parts: VEHICLE_PARTS, severities: SEVERITIES },
    /** The fields of a drawn finding, `__N__` standing for its number (the page's script gives it). */
    addedNames: (n: number | string) => ({
      media: FIELD.added(n, "media"),
      bbox: FIELD.added(n, "bbox"),
      type: FIELD.added(n, "type"),
      part: FIELD.added(n, "part"),
      severity: FIELD.added(n, "severity"),
    }),
    nextAdded: Math.max(-1, ...choices.added.map((a) => a.n)) + 1,
  };
}

export type ReviewPageView = ReturnType<typeof reviewPageView>;
