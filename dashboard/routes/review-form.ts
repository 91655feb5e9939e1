import { VEHICLE_PARTS } from "../../core/domain/closeups.ts";
import type { ReviewRecord } from "../../core/domain/review.ts";
import type { Finding, Report } from "../../core/schemas/report.ts";
import { MAX_ADDED, REVIEWER_TYPES } from "../../core/schemas/review.ts";

/**
 * The review page's form (review.eta) as plain fields, so that confirming, rejecting and changing
 * work without the page's script: `d.<finding>` (confirm, reject or empty: not decided), `t.`, `p.`
 * and `s.<finding>` (type, part, severity as the reviewer leaves them), and for each finding drawn
 * on a photo `a.<n>.media`, `.bbox` ("x,y,w,h", relative), `.type`, `.part` and `.severity`.
 * Here they are read into choices, and the choices into the API's review body.
 */
export const FIELD = {
  decision: (finding: string) => `d.${finding}`,
  type: (finding: string) => `t.${finding}`,
  part: (finding: string) => `p.${finding}`,
  severity: (finding: string) => `s.${finding}`,
  added: (n: number | string, what: "media" | "bbox" | "type" | "part" | "severity") => `a.${n}.${what}`,
};

/** What the form says of a model's finding: decided or not, and its type, part ("" for none) and severity. */
export type FindingChoice = { action: "" | "confirm" | "reject"; type: string; part: string; severity: string };
/** A finding the reviewer drew; `n` numbers its fields. */
export type AddedChoice = { n: number; media_id: string; bbox: number[]; type: string; part: string; severity: string };
export type ReviewChoices = { findings: Map<string, FindingChoice>; added: AddedChoice[]; note: string };

/** What the page starts from: the latest review where there is one (a new one replaces it), else nothing decided. */
export function storedChoices(report: Report, review: ReviewRecord | null): ReviewChoices {
  const decisions = new Map((review?.decisions ?? []).map((d) => [d.finding, d]));
  const findings = new Map<string, FindingChoice>();
  for (const f of report.findings) {
    const d = decisions.get(f.id);
    findings.set(f.id, {
      action: d === undefined ? "" : d.action === "reject" ? "reject" : "confirm",
      type: d?.type ?? f.type,
      part: (d?.part === undefined ? f.part : d.part) ?? "",
      severity: d?.severity ?? f.severity,
    });
  }
  const added = (review?.added ?? []).map((a, n) => ({
    n,
    media_id: a.media_id,
    bbox: a.bbox,
    type: a.type,
    part: a.part ?? "",
    severity: a.severity,
  }));
  return { findings, added, note: review?.note ?? "" };
}

type Fields = Record<string, string | string[] | undefined>;

/** The choices a posted form makes; a field missing leaves the model's value. */
export function postedChoices(report: Report, fields: Fields): ReviewChoices {
  const get = (name: string): string | undefined => {
    const value = fields[name];
    return Array.isArray(value) ? value[0] : value;
  };
  const findings = new Map<string, FindingChoice>();
  for (const f of report.findings) {
    const action = get(FIELD.decision(f.id));
    findings.set(f.id, {
      action: action === "confirm" || action === "reject" ? action : "",
      type: get(FIELD.type(f.id)) ?? f.type,
      part: get(FIELD.part(f.id)) ?? f.part ?? "",
      severity: get(FIELD.severity(f.id)) ?? f.severity,
    });
  }
  const numbers = Object.keys(fields)
    .map((name) => /^a\.(\d{1,6})\.media$/.exec(name)?.[1])
    .filter((n) => n !== undefined)
    .map(Number)
    .sort((a, b) => a - b)
    // One more than the API takes, so that too many is refused rather than cut.
    .slice(0, MAX_ADDED + 1);
  const added = numbers.map((n) => ({
    n,
    media_id: get(FIELD.added(n, "media")) ?? "",
    bbox: (get(FIELD.added(n, "bbox")) ?? "").split(",").map((x) => (x.trim() === "" ? Number.NaN : Number(x))),
    type: get(FIELD.added(n, "type")) ?? "",
    part: get(FIELD.added(n, "part")) ?? "",
    severity: get(FIELD.added(n, "severity")) ?? "",
  }));
  return { findings, added, note: (get("note") ?? "").replaceAll("\r\n", "\n") };
}

/** How a choice leaves a model's finding: a change is a correction of a finding kept. */
export function stateOf(f: Finding, c: FindingChoice): "undecided" | "confirmed" | "rejected" | "changed" {
  if (c.action === "reject") return "rejected";
  if (c.type !== f.type || c.part !== (f.part ?? "") || c.severity !== f.severity) return "changed";
  return c.action === "confirm" ? "confirmed" : "undecided";
}

/** Who each entry of the body's `decisions` and `added` is, in the reviewer's words, for the messages. */
export type BodyLabels = { decisions: string[]; added: string[] };

/** The API's review body the choices make (checked by ReviewBody after), with labels for its entries. */
export function reviewBodyOf(report: Report, c: ReviewChoices): { body: unknown; labels: BodyLabels } {
  const decisions: Record<string, unknown>[] = [];
  const labels: BodyLabels = { decisions: [], added: [] };
  for (const [i, f] of report.findings.entries()) {
    const choice = c.findings.get(f.id)!;
    const state = stateOf(f, choice);
    if (state === "undecided") continue;
    labels.decisions.push(`Finding ${i + 1}`);
    if (state !== "changed") {
      decisions.push({ finding: f.id, action: state === "rejected" ? "reject" : "confirm" });
      continue;
    }
    decisions.push({
      finding: f.id,
      action: "change",
      ...(choice.type === f.type ? {} : { type: choice.type }),
      ...(choice.part === (f.part ?? "") ? {} : { part: choice.part === "" ? null : choice.part }),
      ...(choice.severity === f.severity ? {} : { severity: choice.severity }),
    });
  }
  const added = c.added.map((a, i) => {
    labels.added.push(`New finding ${i + 1}`);
    return { media_id: a.media_id, type: a.type, ...(a.part === "" ? {} : { part: a.part }), severity: a.severity, bbox: a.bbox };
  });
  const note = c.note.trim();
  return { body: { decisions, added, ...(note === "" ? {} : { note }) }, labels };
}

const WHAT_WENT_WRONG: Record<string, string> = {
  type: "choose a type of damage from the list",
  part: "choose a part from the list",
  severity: "choose a severity",
  bbox: "its box must be on the photo and have a size: draw it again",
  media_id: "its photo is not one of this report's",
  note: "the note is too long",
  added: `at most ${MAX_ADDED} new findings`,
};

/**
 * A mistake in the body, named as the page names things: `path` is where (zod's path, or the API's
 * `param` such as `decisions[0].type`), `message` the API's words, used where no plainer ones fit.
 */
export function mistakeWords(path: readonly PropertyKey[] | string, message: string, labels: BodyLabels): string {
  const parts = typeof path === "string" ? path.split(/[.[\]]+/).filter(Boolean) : path.map(String);
  const [list, index, key] = parts;
  const who = list === "decisions" || list === "added" ? labels[list][Number(index)] : undefined;
  const what = key === undefined ? undefined : key === "finding" ? undefined : WHAT_WENT_WRONG[key];
  if (who) return `${who}: ${what ?? message}`;
  return list && WHAT_WENT_WRONG[list] && parts.length === 1
    ? `${WHAT_WENT_WRONG[list]![0]!.toUpperCase()}${WHAT_WENT_WRONG[list]!.slice(1)}.`
    : message;
}

/** The options of a finding's type and part selects: the reviewer's lists, after the model's own value where it is not in them. */
export const typeOptions = (f: Finding): string[] => [
  ...((REVIEWER_TYPES as readonly string[]).includes(f.type) ? [] : [f.type]),
  ...REVIEWER_TYPES,
];
export const partOptions = (f: Finding): string[] => [
  ...(f.part === null || (VEHICLE_PARTS as readonly string[]).includes(f.part) ? [] : [f.part]),
  ...VEHICLE_PARTS,
];
