import { CLOSEUP } from "../../core/domain/closeups.ts";
import { EXTERIOR_ANGLES, isSearched } from "../../core/schemas/capture.ts";
import type { Report } from "../../core/schemas/report.ts";
import { type Baseline, baselineWhen, findingWords, type SinceKind } from "../../core/views/new-since.ts";
import { isCounted } from "../../core/views/review-words.ts";
import { type Picture, pictureOf, type ReportView } from "./report-view.ts";

/** A finding listed under its photo: this inspection's with its mark, the baseline's with whether it is still seen. */
type Listed = { words: string; kind: SinceKind | "then"; mark: string | null; evidence: Picture | null };
type Side = { picture: Picture | null; findings: Listed[] };
/** One angle (or close-up) seen at the baseline and now: a side is null where that inspection has no such photo. */
export type Pair = { angle: string; part: string | null; before: Side | null; after: Side | null; newCount: number };

type Photo = Pick<Report["photos"][number], "media_id" | "angle" | "part" | "width" | "height">;

/**
 * The photos of a report by what they show: an exterior angle by its name, a close-up by its part
 * and its place among that part's close-ups, so the first close-up of a door then pairs with the
 * first of that door now. The VIN and odometer photos show no damage and are left out.
 */
function byView(photos: readonly Photo[]): Map<string, Photo> {
  const views = new Map<string, Photo>();
  const closeups = new Map<string, number>();
  for (const p of photos.filter((x) => isSearched(x.angle))) {
    if (p.angle !== CLOSEUP) {
      views.set(p.angle, p);
      continue;
    }
    const k = closeups.get(p.part ?? "") ?? 0;
    closeups.set(p.part ?? "", k + 1);
    views.set(`${CLOSEUP}:${p.part ?? ""}:${k}`, p);
  }
  return views;
}

/** Exterior angles in the walkaround's order, then close-ups. */
const order = (key: string) => {
  const i = (EXTERIOR_ANGLES as readonly string[]).indexOf(key);
  return i === -1 ? EXTERIOR_ANGLES.length : i;
};

/**
 * The before/after of a handover for the inspection page (handover.eta): the baseline and this
 * inspection side by side angle by angle, each side with the findings on its photo, this one's marked
 * against the baseline (new-since.ts), and the counts. `report` is this inspection's ReportView,
 * made with the same baseline.
 */
export function handoverView(report: ReportView, baseline: Baseline, mediaUrl: (mediaId: string) => string) {
  const then = baseline.report;
  const notSeen = new Set(report.comparison?.not_seen ?? []);
  const nowViews = byView(report.photos);
  const thenViews = byView(then?.photos ?? []);
  const keys = [...new Set([...nowViews.keys(), ...thenViews.keys()])].sort((a, b) => order(a) - order(b));

  const nowFindings = new Map<string, Listed[]>();
  for (const f of report.findings) {
    // Only what the comparison weighed: not a rejected finding, nor a VIN mismatch.
    if (!f.since || !f.media_id) continue;
    const listed = { words: findingWords(f), kind: f.since.kind, mark: f.since.mark, evidence: f.evidence };
    nowFindings.set(f.media_id, [...(nowFindings.get(f.media_id) ?? []), listed]);
  }
  const thenFindings = new Map<string, Listed[]>();
  for (const f of then?.findings ?? []) {
    if (!isCounted(f) || f.type === "vin_mismatch" || !f.media_id) continue;
    const listed = { words: findingWords(f), kind: "then" as const, mark: notSeen.has(f.id) ? "Not seen now" : null, evidence: null };
    thenFindings.set(f.media_id, [...(thenFindings.get(f.media_id) ?? []), listed]);
  }

  const side = (p: Photo | undefined, findings: Map<string, Listed[]>): Side | null =>
    p ? { picture: pictureOf(mediaUrl(p.media_id), p), findings: findings.get(p.media_id) ?? [] } : null;
  const pairs: Pair[] = keys.map((key) => {
    const [now, before] = [nowViews.get(key), thenViews.get(key)];
    const after = side(now, nowFindings);
    return {
      angle: (now ?? before)!.angle,
      part: (now ?? before)!.part,
      before: side(before, thenFindings),
      after,
      newCount: after?.findings.filter((f) => f.kind === "new" || f.kind === "worsened").length ?? 0,
    };
  });
  const since = report.newSince;
  return {
    baseline: { id: baseline.id, reference: baseline.reference, when: baselineWhen(baseline), readable: then !== null },
    counts: {
      new: since?.items.length ?? 0,
      worsened: report.comparison?.worsened.length ?? 0,
      preexisting: since?.preexisting ?? 0,
      notSeen: since?.notSeen ?? 0,
    },
    pairs,
  };
}

export type HandoverView = ReturnType<typeof handoverView>;
