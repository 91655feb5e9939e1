import { completedReport } from "../operations/reports.ts";
import type { Scope } from "../ports/records.ts";
import { type Comparison, type Finding, Report } from "../schemas/report.ts";
import type { Services } from "../runtime/services.ts";
import { ENGLISH, findingWords, type ReportWords } from "./report-words.ts";

/**
 * How a handover's comparison (report.comparison) reads to people, the same on the dashboard, a
 * shared link and the PDF: which damage is new since the baseline, which was there then, in plain
 * words with the baseline's date.
 */

/** The inspection a report is compared with, and its report as read now (a review applied); null where it cannot be read. */
export type Baseline = { id: string; reference: string | null; completedAt: number | null; report: Report | null };

/** What a finding is against the baseline: new, new because worse than its baseline finding, or there before. */
export const SINCE_KINDS = ["new", "worsened", "preexisting"] as const;
export type SinceKind = (typeof SINCE_KINDS)[number];
export type Since = { kind: SinceKind; mark: string; was: Finding | null };

/** A new finding as the "New since" list tells it; `n` is its place in the report's findings, from 1. */
export type NewItem = { n: number; finding: Finding; kind: SinceKind; words: string; mark: string; was: string | null };
export type NewSince = {
  title: string;
  /** The baseline's date in words ("2026-11-23 14:05 UTC"), or "the baseline" where it is not known. */
  when: string;
  baseline: Baseline;
  items: NewItem[];
  preexisting: number;
  notSeen: number;
};

/** The baseline of an inspection, read in its scope; its report null if it has none to read (never expected: a baseline is completed). */
export async function loadBaseline(s: Pick<Services, "inspections" | "blobs">, scope: Scope, id: string): Promise<Baseline> {
  const record = await s.inspections.get(scope, id);
  if (!record) return { id, reference: null, completedAt: null, report: null };
  const report = await completedReport(s, record).then(
    (json) => Report.parse(JSON.parse(json)),
    () => null,
  );
  return { id, reference: record.reference, completedAt: record.completedAt, report };
}

/** "2026-11-23 14:05 UTC" in English: minutes are what a desk compares; the dashboard writes times the same way. */
export const minuteWords = (ms: number, w: ReportWords = ENGLISH) => w.minutes(ms);

export const baselineWhen = (b: Baseline, w: ReportWords = ENGLISH) =>
  b.completedAt === null ? w.t("since.the_baseline") : minuteWords(b.completedAt, w);

/** "dent on the front bumper, minor". */
export { findingWords };

/** Each finding the comparison weighed, by id, with its mark ("New", "Worse than at …", "Was there at …"). */
export function sinceOf(c: Comparison, baseline: Baseline, w: ReportWords = ENGLISH): Map<string, Since> {
  const when = baselineWhen(baseline, w);
  const then = new Map((baseline.report?.findings ?? []).map((f) => [f.id, f]));
  const worse = new Map(c.worsened.map((p) => [p.finding, p.baseline_finding]));
  const since = new Map<string, Since>();
  for (const id of c.new) {
    const was = worse.get(id);
    since.set(
      id,
      was === undefined
        ? { kind: "new", mark: w.t("since.mark_new"), was: null }
        : { kind: "worsened", mark: w.t("since.mark_worse", { when }), was: then.get(was) ?? null },
    );
  }
  for (const p of c.preexisting)
    since.set(p.finding, { kind: "preexisting", mark: w.t("since.mark_was", { when }), was: then.get(p.baseline_finding) ?? null });
  return since;
}

/** The "New since <date>" summary of a compared report: its new findings (the worse ones with what they were), and what was there before. */
export function newSince(
  report: Pick<Report, "comparison" | "findings">,
  baseline: Baseline | null,
  w: ReportWords = ENGLISH,
): NewSince | null {
  const c = report.comparison;
  if (!c || !baseline) return null;
  const when = baselineWhen(baseline, w);
  const since = sinceOf(c, baseline, w);
  const items: NewItem[] = [];
  for (const [i, finding] of report.findings.entries()) {
    const s = since.get(finding.id);
    if (!s || s.kind === "preexisting") continue;
    items.push({
      n: i + 1,
      finding,
      kind: s.kind,
      words: findingWords(finding, w),
      mark: s.mark,
      was: s.was ? findingWords(s.was, w) : null,
    });
  }
  return { title: w.t("since.title", { when }), when, baseline, items, preexisting: c.preexisting.length, notSeen: c.not_seen.length };
}
