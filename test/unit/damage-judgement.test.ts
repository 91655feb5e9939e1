import { describe, expect, it } from "vitest";
import { photoNeedsNoReview, reviewReasons, reviewStatus } from "../../core/domain/review.ts";
import { currentReportJson } from "../../core/domain/stored-report.ts";
import type { Detection } from "../../core/ports/detection-runner.ts";
import { seenOnce } from "../../inference/detection/detect-photos.ts";
import type { Detected } from "../../inference/detection/onnx-detector.ts";
import { judgedRegion, type Judgement } from "../../inference/detection/photo-judge.ts";
import { suggestedCloseups } from "../../inference/detection/suggest-closeups.ts";

/** A 4 × 4 judgement of a 400 × 400 photo judged at 400 px (no padding), hot where `hot` says. */
function judgement(damage: number, hot: Record<number, number>): Judgement {
  const damageCells = new Float32Array(16);
  for (const [k, v] of Object.entries(hot)) damageCells[Number(k)] = v;
  return {
    damage,
    broken: 0,
    severity: "minor",
    grid: 4,
    damageCells,
    brokenCells: new Float32Array(16),
    lb: { scale: 1, padX: 0, padY: 0, width: 400, height: 400 },
  };
}
const part = (name: string, x1: number, y1: number, x2: number, y2: number): Detected => ({ name, x1, y1, x2, y2, score: 0.9, cls: 0 });

describe("the judged region", () => {
  it("is the extent of the cells near the peak, in the photo's pixels", () => {
    const j = judgement(0.9, { 5: 0.9, 6: 0.6, 15: 0.3 });
    expect(judgedRegion(j.damageCells, j.grid, j.lb, 400)).toEqual({ x1: 100, y1: 100, x2: 300, y2: 200 });
  });
  it("is the whole photo when no cell stands out", () => {
    const j = judgement(0.9, { 3: 0.1 });
    expect(judgedRegion(j.damageCells, j.grid, j.lb, 400)).toEqual({ x1: 0, y1: 0, x2: 400, y2: 400 });
  });
});

describe("suggested close-ups", () => {
  const parts = [part("front_left_door", 0, 0, 200, 400), part("wheel", 50, 250, 150, 350), part("hood", 200, 0, 400, 200)];
  it("asks for the part under the hottest cell, by the rule findings' parts follow", () => {
    // Cell 12 (row 3, column 0) is (0, 300)-(100, 400): in the door, and its centre on the wheel box's corner, outside the wheel.
    expect(suggestedCloseups(judgement(0.95, { 12: 0.9, 2: 0.1 }), parts, 400)).toEqual([
      { part: "front_left_door", reason: "damage_suspected" },
    ]);
    // Cell 5 (100, 100)-(200, 200) is on the door, cell 2 (200, 0)-(300, 100) on the hood: hottest first.
    expect(suggestedCloseups(judgement(0.95, { 5: 0.95, 2: 0.9 }), parts, 400).map((s) => s.part)).toEqual(["front_left_door", "hood"]);
    expect(suggestedCloseups(judgement(0.95, { 2: 0.9 }), parts, 400)).toEqual([{ part: "hood", reason: "damage_suspected" }]);
  });
  it("asks for nothing on a photo judged clean", () => {
    expect(suggestedCloseups(judgement(0.2, { 2: 0.9 }), parts, 400)).toEqual([]);
  });
});

describe("one damage seen from afar and close", () => {
  const d = (mediaId: string, type: Detection["type"], part: string | null): Detection => ({
    mediaId,
    type,
    part,
    severity: "minor",
    confidence: 0.7,
    bbox: [0, 0, 1, 1],
    evidence: null,
  });
  it("keeps the close-up's finding and drops the same damage on the same part from afar", () => {
    const found = [d("far", "dent", "hood"), d("far", "damage_suspected", "hood"), d("far", "dent", "trunk"), d("close", "dent", "hood")];
    expect(seenOnce(found, new Set(["close"])).map((f) => `${f.mediaId}:${f.type}:${f.part}`)).toEqual([
      "far:dent:trunk",
      "close:dent:hood",
    ]);
  });
  it("lets any close-up finding stand for a suspicion placed on no part, and only for that", () => {
    const found = [d("far", "damage_suspected", null), d("far", "dent", null), d("close", "scratch", null)];
    expect(seenOnce(found, new Set(["close"])).map((f) => `${f.mediaId}:${f.type}`)).toEqual(["far:dent", "close:scratch"]);
    expect(seenOnce(found, new Set())).toHaveLength(3);
  });
  it("keeps a far finding of another type on that part", () => {
    const found = [d("far", "scratch", "hood"), d("close", "dent", "hood")];
    expect(seenOnce(found, new Set(["close"]))).toHaveLength(2);
  });
});

describe("review", () => {
  const base = { findings: [], photosPassed: [true], vinConfirmed: true, policy: "when_unsure" as const };
  it("is not required for a sure, clean inspection", () => {
    expect(reviewReasons(base)).toEqual([]);
    expect(reviewStatus([], "when_unsure")).toBe("not_required");
  });
  it("names each reason", () => {
    const reasons = reviewReasons({
      findings: [
        { type: "damage_suspected", confidence: 0.9 },
        { type: "scratch", confidence: 0.3 },
      ],
      photosPassed: [true, false],
      vinConfirmed: false,
      policy: "always",
    });
    expect(reasons).toEqual(["damage_suspected", "low_confidence", "photo_problems_kept", "vin_unconfirmed", "policy"]);
  });
  it("is never required under the policy off", () => {
    expect(reviewStatus(["damage_suspected"], "off")).toBe("not_required");
    expect(reviewStatus(["damage_suspected"], "when_unsure")).toBe("required");
  });
});

describe("reports stored before review existed", () => {
  it("read with review not required, no damage score and no part", () => {
    const old = JSON.stringify({ summary: { findings: 0, grade: "none" }, photos: [{ media_id: "med_1" }], findings: [{ id: "fnd_1" }] });
    expect(JSON.parse(currentReportJson(old))).toEqual({
      summary: { findings: 0, grade: "none", needs_review: false, new_findings: null },
      photos: [{ media_id: "med_1", part: null, damage_score: null }],
      findings: [{ id: "fnd_1", part_position: null, source: "model", review: null }],
      review: { status: "not_required", reasons: [], reviewed_at: null, reviewed_by: null, note: null },
      comparison: null,
      integrity: { same_vehicle: "unknown", inconsistent_photos: [], reused_photos: [] },
    });
  });
  it("stored before comparisons keep their review and gain no comparison, no part position and no new findings", () => {
    const old = JSON.stringify({
      summary: { findings: 1, grade: "minor", needs_review: false },
      photos: [],
      findings: [{ id: "fnd_1", source: "model", review: null }],
      review: { status: "not_required", reasons: [], reviewed_at: null, reviewed_by: null, note: null },
    });
    const read = JSON.parse(currentReportJson(old));
    expect(read.comparison).toBeNull();
    expect(read.summary.new_findings).toBeNull();
    expect(read.findings[0].part_position).toBeNull();
  });
  it("stored before findings had a source keep their review and gain the note", () => {
    const old = JSON.stringify({
      summary: { findings: 0, grade: "none", needs_review: true },
      photos: [],
      findings: [],
      review: { status: "required", reasons: ["vin_unconfirmed"], reviewed_at: null, reviewed_by: null },
    });
    expect(JSON.parse(currentReportJson(old)).review).toEqual({
      status: "required",
      reasons: ["vin_unconfirmed"],
      reviewed_at: null,
      reviewed_by: null,
      note: null,
    });
  });
  it("are told from current ones by the key, not by a value that spells it", () => {
    const old = JSON.stringify({
      summary: { findings: 0, grade: "none" },
      photos: [],
      findings: [],
      vehicle: { model: '"comparison": x' },
    });
    expect(JSON.parse(currentReportJson(old)).review).toEqual({
      status: "not_required",
      reasons: [],
      reviewed_at: null,
      reviewed_by: null,
      note: null,
    });
  });
  it("leave a current report as it is", () => {
    const current = JSON.stringify({
      summary: { needs_review: true },
      review: { status: "required", note: null },
      comparison: null,
      integrity: {},
    });
    expect(currentReportJson(current)).toBe(current);
  });
});

describe("a photo's own problems and review", () => {
  const q = (problems: string[]) => ({
    brightness: 0.5,
    sharpness: 100,
    glare: 0,
    passed: problems.length === 0,
    problems: problems as never,
  });
  it("forgives only a too-small photo the whole-photo judgement looked at", () => {
    expect(photoNeedsNoReview(q([]), null)).toBe(true);
    expect(photoNeedsNoReview(q(["too_small"]), 0.1)).toBe(true);
    expect(photoNeedsNoReview(q(["too_small"]), null)).toBe(false);
    expect(photoNeedsNoReview(q(["too_small", "glare"]), 0.1)).toBe(false);
    expect(photoNeedsNoReview(q(["blurry"]), 0.1)).toBe(false);
    expect(photoNeedsNoReview(null, 0.1)).toBe(false);
  });
});
