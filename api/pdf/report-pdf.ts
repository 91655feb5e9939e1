import PDFDocument from "pdfkit";
import sharp from "sharp";
import { logoBlobKey } from "../../core/domain/branding.ts";
import { evidenceMediaId } from "../../core/domain/build-report.ts";
import { completedReport } from "../../core/operations/reports.ts";
import type { InspectionRecord, Scope } from "../../core/ports/records.ts";
import { type Finding, Report } from "../../core/schemas/report.ts";
import type { Services } from "../../core/runtime/services.ts";
import type { Locale } from "../../core/domain/locales.ts";
import { loadBaseline, type NewSince, newSince } from "../../core/views/new-since.ts";
import { findingWords, type ReportWords, reportLocale, reportWords } from "../../core/views/report-words.ts";
import { findingMark, isCounted, reviewReasonWords } from "../../core/views/review-words.ts";
import {
  A4,
  BOLD,
  BOTTOM_MARGIN,
  collect,
  CONTENT_WIDTH,
  type Doc,
  FONT,
  FONT_FILES,
  fields,
  GRADE_COLOURS,
  INK,
  type Look,
  MARGIN,
  MUTED,
  RULE,
  room,
  SHADE,
  section,
} from "./pdf-layout.ts";

// Photos are scaled down before they are embedded, so that a report stays small enough to mail:
// evidence is printed across the page, thumbnails at a third of its width.
const EVIDENCE_LONG_SIDE = 1200;
const THUMBNAIL_LONG_SIDE = 480;
const JPEG_QUALITY = 80;

const REVIEWER_BOX = "#f59e0b";
type Picture = { jpeg: Buffer; width: number; height: number };

/** The logo's box in the header, in points: the capture page's 160×40, a little smaller on paper. */
const LOGO_BOX: [number, number] = [150, 36];

/**
 * The condition report of a completed inspection as an A4 PDF, for printing and filing: who and
 * what was inspected, the VIN check, the grade, each finding with its evidence photo, and every
 * photo taken with its quality verdict. Refuses as the JSON report does (completedReport).
 * In the inspection's capture.locale unless `locale` says otherwise (a shared link's reader may
 * choose), and in the account's branding where it has one.
 */
export async function reportPdf(
  s: Pick<Services, "inspections" | "blobs" | "keys">,
  inspection: InspectionRecord,
  o: { locale?: Locale } = {},
): Promise<Buffer> {
  const report = Report.parse(JSON.parse(await completedReport(s, inspection)));
  const scope: Scope = { accountId: inspection.accountId, livemode: inspection.livemode };
  const w = reportWords(o.locale ?? reportLocale(inspection));
  const [baseline, look] = await Promise.all([
    inspection.baselineInspectionId ? loadBaseline(s, scope, inspection.baselineInspectionId) : null,
    lookOf(s, inspection.accountId, w),
  ]);
  // Scaled on sharp's threads, all at once, before the layout (synchronous) starts.
  const [evidence, thumbnails] = await Promise.all([
    Promise.all(report.findings.map((f) => picture(s, scope, evidenceMediaId(f), EVIDENCE_LONG_SIDE))),
    Promise.all(report.photos.map((p) => picture(s, scope, p.media_id, THUMBNAIL_LONG_SIDE))),
  ]);
  const doc = new PDFDocument({
    size: "A4",
    margins: { top: MARGIN, left: MARGIN, right: MARGIN, bottom: BOTTOM_MARGIN },
    // Kept in memory until the end, so the footer can say how many pages there are.
    bufferPages: true,
    lang: w.locale,
    info: {
      Title: w.t("report.info_title", { id: inspection.id }),
      Subject: w.t("report.info_subject", { vin: report.vehicle.vin, grade: w.grade(report.grade), n: report.summary.findings }),
      Author: look.name,
      Creator: w.t("report.service"),
      // The report's date rather than now: the same inspection always gives the same document.
      CreationDate: new Date(inspection.completedAt ?? inspection.updatedAt),
    },
  });
  doc.registerFont(FONT, FONT_FILES.regular);
  doc.registerFont(BOLD, FONT_FILES.bold);
  const bytes = collect(doc);
  header(doc, w, look, inspection);
  vehicle(doc, w, look, report);
  result(doc, w, look, report);
  review(doc, w, report);
  const since = newSince(report, baseline, w);
  if (since) newSinceSection(doc, w, look, since);
  if (report.findings.length > 0) {
    findingsTable(doc, w, look, report.findings);
    section(doc, look, w.t("section.evidence"), evidenceSize(evidence[0]!)[1] + 40);
    const angleOf = new Map(report.photos.map((p) => [p.media_id, p.angle]));
    for (const [i, f] of report.findings.entries())
      evidencePhoto(doc, w, i + 1, f, evidence[i]!, f.media_id ? angleOf.get(f.media_id) : undefined);
  }
  photoGrid(doc, w, look, report, thumbnails);
  footers(doc, w, look, inspection);
  doc.end();
  return bytes;
}

/** The account's branding as the PDF shows it; the product's name, ink headings and grey rules where it has none. */
async function lookOf(s: Pick<Services, "keys" | "blobs">, accountId: string, w: ReportWords): Promise<Look> {
  const branding = await s.keys.branding(accountId);
  // A logo that cannot be read leaves the header without one rather than the report unanswered.
  const logo = branding.logo ? await s.blobs.get(logoBlobKey(branding.logo.id)).catch(() => null) : null;
  return {
    name: branding.displayName ?? w.t("report.service"),
    logo: logo ?? null,
    heading: branding.accentColor ?? INK,
    rule: branding.accentColor ?? RULE,
  };
}

async function picture(s: Pick<Services, "inspections" | "blobs">, scope: Scope, mediaId: string | null, longSide: number) {
  const media = mediaId ? await s.inspections.getMedia(scope, mediaId) : null;
  const bytes = media ? await s.blobs.get(media.blobKey) : null;
  if (!bytes) return null;
  const { data, info } = await sharp(bytes)
    .rotate()
    .resize({ width: longSide, height: longSide, fit: "inside", withoutEnlargement: true })
    .jpeg({ quality: JPEG_QUALITY })
    .toBuffer({ resolveWithObject: true });
  return { jpeg: data, width: info.width, height: info.height } satisfies Picture;
}

function header(doc: Doc, w: ReportWords, look: Look, inspection: InspectionRecord): void {
  let top = MARGIN;
  if (look.logo) {
    doc.image(look.logo, MARGIN, top, { fit: LOGO_BOX });
    top += LOGO_BOX[1] + 8;
  }
  doc.font(FONT).fontSize(9).fillColor(MUTED).text(look.name.toLocaleUpperCase(w.locale), MARGIN, top, { characterSpacing: 1 });
  doc.font(BOLD).fontSize(22).fillColor(INK).text(w.t("report.title"));
  if (!inspection.livemode) {
    // Loud on purpose: a printed test report must not pass for a real inspection.
    const [bw, bh] = [110, 22];
    const x = MARGIN + CONTENT_WIDTH - bw;
    doc.roundedRect(x, MARGIN, bw, bh, 3).fill(GRADE_COLOURS.severe);
    doc
      .font(BOLD)
      .fontSize(10)
      .fillColor("#ffffff")
      .text(w.t("report.test_mode"), x, MARGIN + 5, { width: bw, align: "center" });
  }
  doc.y = top + 46;
  fields(doc, [
    [w.t("field.inspection"), inspection.id],
    [w.t("field.reference"), inspection.reference ?? "—"],
    [w.t("field.created"), w.when(inspection.createdAt)],
    [w.t("field.completed"), w.when(inspection.completedAt)],
    [w.t("field.mode"), inspection.livemode ? w.t("mode.live") : w.t("mode.test")],
  ]);
}

function vehicle(doc: Doc, w: ReportWords, look: Look, report: Report): void {
  const v = report.vehicle;
  section(doc, look, w.t("section.vehicle"));
  fields(doc, [
    [w.t("field.vin"), v.vin],
    [w.t("field.make"), v.make ?? "—"],
    [w.t("field.model"), v.model ?? "—"],
    [w.t("field.year"), v.year === null ? "—" : String(v.year)],
  ]);
  section(doc, look, w.t("section.vin_check"));
  fields(doc, [
    [w.t("field.vin_on_file"), v.vin],
    [w.t("field.vin_observed"), v.vin_observed ?? w.t("vin.not_given")],
    [
      w.t("field.confirmed"),
      v.vin_confirmed ? w.t("vin.confirmed") : w.t("vin.not_confirmed"),
      v.vin_confirmed ? GRADE_COLOURS.none : GRADE_COLOURS.severe,
    ],
  ]);
}

const reviewedBy = (w: ReportWords, report: Report, key: "review.reviewed_by" | "review.reviewed_by_sentence") => {
  const { reviewed_by, reviewed_at } = report.review;
  return w.t(key, { by: reviewed_by ?? "—", when: w.when(reviewed_at === null ? null : Date.parse(reviewed_at)) });
};

function result(doc: Doc, w: ReportWords, look: Look, report: Report): void {
  const { status } = report.review;
  const rejected = report.findings.filter((f) => !isCounted(f)).length;
  section(doc, look, w.t("section.result"));
  fields(doc, [
    // "none" in green would read as undamaged: until a person has looked, it is not.
    status === "required" && report.grade === "none"
      ? [w.t("field.grade"), w.t("result.needs_review_none"), GRADE_COLOURS.moderate]
      : [w.t("field.grade"), w.grade(report.grade), GRADE_COLOURS[report.grade]],
    [
      w.t("field.findings"),
      rejected > 0 ? w.t("result.findings_rejected", { count: report.summary.findings, rejected }) : String(report.summary.findings),
    ],
    status === "required"
      ? [w.t("field.review"), w.t("review.needs"), GRADE_COLOURS.moderate]
      : status === "completed"
        ? [w.t("field.review"), reviewedBy(w, report, "review.reviewed_by")]
        : [w.t("field.review"), w.t("review.not_needed")],
    [w.t("field.detected_by"), report.model ? `${report.model.name} ${report.model.version}` : w.t("result.no_model")],
  ]);
}

/** Why the report needs a person, or who reviewed it and what they noted; then whether any damage stands. */
function review(doc: Doc, w: ReportWords, report: Report): void {
  const { status, reasons, note } = report.review;
  const line = (text: string, colour = INK, font = BOLD, size = 12) =>
    doc.font(font).fontSize(size).fillColor(colour).text(text, MARGIN, doc.y, { width: CONTENT_WIDTH });
  doc.moveDown(0.6);
  if (status === "required") {
    line(w.t("review.needs_before"), GRADE_COLOURS.moderate);
    doc.moveDown(0.2);
    for (const reason of reviewReasonWords(reasons, w)) line(`•  ${reason}`, INK, FONT, 10);
    return;
  }
  if (status === "completed") {
    line(reviewedBy(w, report, "review.reviewed_by_sentence"));
    doc.moveDown(0.2);
    if (note) line(w.t("review.note_quoted", { note }), INK, FONT, 10);
    if (reasons.length > 0) line(w.t("review.sent_because"), MUTED, FONT, 9);
    for (const reason of reviewReasonWords(reasons, w)) line(`•  ${reason}`, MUTED, FONT, 9);
    doc.moveDown(0.4);
  }
  if (report.summary.findings === 0) line(w.t("result.no_damage"), GRADE_COLOURS.none);
}

/**
 * What a handover desk reads first: the damage new since the baseline, each by its number in the
 * findings below (a worse one with what it was then), and how much was there before.
 */
function newSinceSection(doc: Doc, w: ReportWords, look: Look, since: NewSince): void {
  const line = (text: string, colour = INK, font = FONT, size = 10) =>
    doc.font(font).fontSize(size).fillColor(colour).text(text, MARGIN, doc.y, { width: CONTENT_WIDTH });
  const { baseline, items, when: then } = since;
  section(doc, look, since.title);
  line(
    baseline.reference
      ? w.t("since.compared_reference", { id: baseline.id, reference: baseline.reference, when: then })
      : w.t("since.compared", { id: baseline.id, when: then }),
    MUTED,
    FONT,
    9,
  );
  doc.moveDown(0.4);
  if (items.length === 0) line(w.t("since.none", { when: then }), GRADE_COLOURS.none, BOLD, 11);
  else line(w.t("since.new_count", { n: items.length }), GRADE_COLOURS.severe, BOLD, 11);
  for (const item of items) {
    doc.moveDown(0.2);
    const words = item.kind === "worsened" ? w.t("since.worsened_item", { words: item.words, mark: inSentence(w, item.mark) }) : item.words;
    line(`•  ${w.t("finding.numbered", { n: item.n, words })}`, INK, BOLD);
    if (item.was) line(`    ${w.t("since.was", { was: item.was })}`, MUTED, FONT, 9);
  }
  doc.moveDown(0.4);
  const { preexisting, notSeen } = since;
  line(w.t("since.preexisting", { n: preexisting, when: then }));
  if (notSeen > 0) line(w.t("since.not_seen", { n: notSeen, when: then }), MUTED, FONT, 9);
}

/** A mark inside a sentence: lower-cased, except in German, whose nouns keep their capital. */
const inSentence = (w: ReportWords, mark: string) => (w.locale === "de" ? mark : mark.toLocaleLowerCase(w.locale));

type Column = { title: string; width: number };
const COLUMNS = (w: ReportWords): Column[] => [
  { title: "#", width: 28 },
  { title: w.t("column.type"), width: 130 },
  { title: w.t("column.part"), width: 150 },
  { title: w.t("column.severity"), width: 100 },
  { title: w.t("column.confidence"), width: CONTENT_WIDTH - 408 },
];
/** Once a review has marked findings, a last column says what it decided of each. */
const REVIEWED_COLUMNS = (w: ReportWords): Column[] => [
  { title: "#", width: 28 },
  { title: w.t("column.type"), width: 110 },
  { title: w.t("column.part"), width: 115 },
  { title: w.t("column.severity"), width: 62 },
  { title: w.t("column.confidence"), width: 66 },
  { title: w.t("column.review"), width: CONTENT_WIDTH - 381 },
];
const ROW_HEIGHT = 20;
/** The cells of a rejected finding's row struck through: type to confidence. */
const STRUCK_CELLS = [1, 2, 3, 4];

function findingsTable(doc: Doc, w: ReportWords, look: Look, findings: Finding[]): void {
  const reviewed = findings.some((f) => findingMark(f) !== null);
  const columns = reviewed ? REVIEWED_COLUMNS(w) : COLUMNS(w);
  section(doc, look, w.t("section.findings"), 2 * ROW_HEIGHT);
  const head = () =>
    tableRow(
      doc,
      columns,
      columns.map((c) => c.title),
      { isHead: true },
    );
  head();
  findings.forEach((f, i) => {
    // A table that runs onto a new page starts there with its header again.
    if (doc.y + ROW_HEIGHT > doc.page.height - doc.page.margins.bottom) {
      doc.addPage();
      head();
    }
    const cells = [String(i + 1), w.damage(f.type), w.part(f.part), w.severity(f.severity), w.percent(f.confidence)];
    if (reviewed) cells.push(findingMark(f, w) ?? w.t("mark.not_decided"));
    // A rejected finding stays listed, struck through: what it said, and that it no longer counts.
    tableRow(doc, columns, cells, { struck: isCounted(f) ? [] : STRUCK_CELLS });
  });
}

function tableRow(doc: Doc, columns: Column[], cells: string[], o: { isHead?: boolean; struck?: number[] } = {}): void {
  const y = doc.y;
  if (o.isHead) doc.rect(MARGIN, y, CONTENT_WIDTH, ROW_HEIGHT).fill(SHADE);
  doc
    .font(o.isHead ? BOLD : FONT)
    .fontSize(9.5)
    .fillColor(o.struck?.length ? MUTED : INK);
  let x = MARGIN;
  cells.forEach((cell, i) => {
    const width = columns[i]!.width;
    const strike = o.struck?.includes(i) ?? false;
    // Noto Sans sits lower in its line box than Helvetica: 4.5 points down centres it in the row.
    doc.text(cell, x + 5, y + 4.5, { width: width - 10, height: ROW_HEIGHT - 4, ellipsis: true, lineBreak: false, strike });
    x += width;
  });
  doc
    .moveTo(MARGIN, y + ROW_HEIGHT)
    .lineTo(MARGIN + CONTENT_WIDTH, y + ROW_HEIGHT)
    .lineWidth(0.5)
    .strokeColor(RULE)
    .stroke();
  doc.x = MARGIN;
  doc.y = y + ROW_HEIGHT;
}

// The page's height less room for a section heading and the caption: a photo never stands apart
// from either.
const EVIDENCE_MAX_HEIGHT = A4.height - MARGIN - BOTTOM_MARGIN - 72;

/** An evidence photo's printed size: across the page, unless that makes it taller than a page allows. */
function evidenceSize(photo: Picture | null): [number, number] {
  if (!photo) return [0, 0];
  const scale = Math.min(CONTENT_WIDTH / photo.width, EVIDENCE_MAX_HEIGHT / photo.height);
  return [photo.width * scale, photo.height * scale];
}

function evidencePhoto(doc: Doc, w: ReportWords, n: number, f: Finding, photo: Picture | null, angle: string | undefined): void {
  const what = w.t("finding.numbered", { n, words: findingWords(f, w) });
  const sure = f.confidence === null ? what : w.t("finding.with_confidence", { words: what, confidence: w.percent(f.confidence) });
  const mark = findingMark(f, w);
  const caption = mark ? `${sure}. ${isCounted(f) ? mark : w.t("mark.not_counted", { mark })}.` : sure;
  const source = [angle ? w.t("evidence.photo", { angle: w.angle(angle) }) : null, f.id].filter(Boolean).join("  ·  ");
  if (photo) {
    const [pw, ph] = evidenceSize(photo);
    room(doc, ph + 40);
    const [left, top] = [MARGIN + (CONTENT_WIDTH - pw) / 2, doc.y];
    doc.image(photo.jpeg, left, top, { width: pw, height: ph });
    // A reviewer's finding has no evidence photo with its box drawn, as a model's has: drawn here.
    if (f.source === "reviewer" && f.bbox) {
      const [bx, by, bw, bh] = f.bbox as [number, number, number, number];
      doc
        .rect(left + bx * pw, top + by * ph, bw * pw, bh * ph)
        .lineWidth(2)
        .strokeColor(REVIEWER_BOX)
        .stroke();
    }
    doc.y = top + ph + 6;
  } else {
    room(doc, 40);
  }
  doc.font(BOLD).fontSize(10).fillColor(INK).text(caption, MARGIN, doc.y, { width: CONTENT_WIDTH });
  doc
    .font(FONT)
    .fontSize(8.5)
    .fillColor(MUTED)
    .text(photo ? source : `${source}  ·  ${w.t("evidence.no_photo")}`, { width: CONTENT_WIDTH });
  doc.moveDown(1.2);
}

const GRID_COLUMNS = 3;
const GRID_GAP = 12;
const CELL_WIDTH = (CONTENT_WIDTH - (GRID_COLUMNS - 1) * GRID_GAP) / GRID_COLUMNS;
const THUMB_HEIGHT = Math.round((CELL_WIDTH * 3) / 4);

function photoGrid(doc: Doc, w: ReportWords, look: Look, report: Report, thumbnails: (Picture | null)[]): void {
  section(doc, look, w.t("section.photos_taken", { n: report.photos.length }), THUMB_HEIGHT + 40);
  for (let start = 0; start < report.photos.length; start += GRID_COLUMNS) {
    room(doc, THUMB_HEIGHT + 44);
    const top = doc.y;
    let bottom = top;
    report.photos.slice(start, start + GRID_COLUMNS).forEach((p, i) => {
      const x = MARGIN + i * (CELL_WIDTH + GRID_GAP);
      const thumbnail = thumbnails[start + i];
      if (thumbnail) doc.image(thumbnail.jpeg, x, top, { fit: [CELL_WIDTH, THUMB_HEIGHT], align: "center", valign: "center" });
      else doc.rect(x, top, CELL_WIDTH, THUMB_HEIGHT).fill(SHADE);
      const problems = w.list(p.quality.problems.map(w.problem));
      const verdict = p.quality.passed
        ? w.t("quality.passed")
        : problems
          ? w.t("quality.flagged_with", { problems })
          : w.t("quality.flagged");
      doc
        .font(BOLD)
        .fontSize(9.5)
        .fillColor(INK)
        .text(w.angle(p.angle), x, top + THUMB_HEIGHT + 5, { width: CELL_WIDTH });
      doc
        .font(FONT)
        .fontSize(8.5)
        .fillColor(p.quality.passed ? GRADE_COLOURS.none : GRADE_COLOURS.moderate)
        .text(p.quality.passed && problems ? `${verdict}: ${problems}` : verdict, { width: CELL_WIDTH });
      bottom = Math.max(bottom, doc.y);
    });
    doc.x = MARGIN;
    doc.y = bottom + GRID_GAP;
  }
}

function footers(doc: Doc, w: ReportWords, look: Look, inspection: InspectionRecord): void {
  const { start, count } = doc.bufferedPageRange();
  for (let i = start; i < start + count; i++) {
    doc.switchToPage(i);
    // Text below the bottom margin would otherwise open a new page.
    doc.page.margins.bottom = 0;
    const y = doc.page.height - 40;
    doc.font(FONT).fontSize(8).fillColor(MUTED);
    doc.text(`${look.name}  ·  ${w.t("report.footer", { id: inspection.id })}`, MARGIN, y, {
      width: CONTENT_WIDTH - 80,
      lineBreak: false,
      ellipsis: true,
    });
    doc.text(w.t("report.page", { n: i - start + 1, count }), MARGIN, y, { width: CONTENT_WIDTH, align: "right", lineBreak: false });
    doc.page.margins.bottom = BOTTOM_MARGIN;
  }
}

/** How a report PDF is answered, by the API and the dashboard alike: an attachment named for its inspection, for whoever asked only. */
export const reportPdfHeaders = (inspectionId: string, pdf: Buffer) => ({
  "content-type": "application/pdf",
  "content-disposition": `attachment; filename="${inspectionId}.pdf"`,
  "cache-control": "private",
  "content-length": String(pdf.length),
});
