import PDFDocument from "pdfkit";
import { evidenceMediaId } from "../../core/domain/build-report.ts";
import sharp from "sharp";
import { completedReport } from "../../core/operations/reports.ts";
import type { InspectionRecord, Scope } from "../../core/ports/records.ts";
import { type Finding, Report } from "../../core/schemas/report.ts";
import type { Services } from "../../core/runtime/services.ts";
import {
  A4,
  BOTTOM_MARGIN,
  collect,
  CONTENT_WIDTH,
  type Doc,
  fields,
  GRADE_COLOURS,
  INK,
  MARGIN,
  MUTED,
  percent,
  room,
  RULE,
  section,
  SHADE,
  when,
  words,
} from "./pdf-layout.ts";
import { loadBaseline, type NewSince, newSince } from "../../core/views/new-since.ts";
import { findingMark, isCounted, reviewReasonWords } from "../../core/views/review-words.ts";

const SERVICE_NAME = "Vehicle inspection service";
// Photos are scaled down before they are embedded, so that a report stays small enough to mail:
// evidence is printed across the page, thumbnails at a third of its width.
const EVIDENCE_LONG_SIDE = 1200;
const THUMBNAIL_LONG_SIDE = 480;
const JPEG_QUALITY = 80;

const REVIEWER_BOX = "#f59e0b";
type Picture = { jpeg: Buffer; width: number; height: number };

/**
 * The condition report of a completed inspection as an A4 PDF, for printing and filing: who and
 * what was inspected, the VIN check, the grade, each finding with its evidence photo, and every
 * photo taken with its quality verdict. Refuses as the JSON report does (completedReport).
 */
export async function reportPdf(s: Pick<Services, "inspections" | "blobs">, inspection: InspectionRecord): Promise<Buffer> {
  const report = Report.parse(JSON.parse(await completedReport(s, inspection)));
  const scope: Scope = { accountId: inspection.accountId, livemode: inspection.livemode };
  const baseline = inspection.baselineInspectionId ? await loadBaseline(s, scope, inspection.baselineInspectionId) : null;
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
    info: {
      Title: `Condition report ${inspection.id}`,
      Subject: `VIN ${report.vehicle.vin}, grade ${report.grade}, ${report.summary.findings} findings`,
      Author: SERVICE_NAME,
      Creator: SERVICE_NAME,
      // The report's date rather than now: the same inspection always gives the same document.
      CreationDate: new Date(inspection.completedAt ?? inspection.updatedAt),
    },
  });
  const bytes = collect(doc);
  header(doc, inspection);
  vehicle(doc, report);
  result(doc, report);
  review(doc, report);
  const since = newSince(report, baseline);
  if (since) newSinceSection(doc, since);
  if (report.findings.length > 0) {
    findingsTable(doc, report.findings);
    section(doc, "Evidence", evidenceSize(evidence[0]!)[1] + 40);
    const angleOf = new Map(report.photos.map((p) => [p.media_id, p.angle]));
    for (const [i, f] of report.findings.entries())
      evidencePhoto(doc, i + 1, f, evidence[i]!, f.media_id ? angleOf.get(f.media_id) : undefined);
  }
  photoGrid(doc, report, thumbnails);
  footers(doc, inspection);
  doc.end();
  return bytes;
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

function header(doc: Doc, inspection: InspectionRecord): void {
  doc.font("Helvetica").fontSize(9).fillColor(MUTED).text(SERVICE_NAME.toUpperCase(), MARGIN, MARGIN, { characterSpacing: 1 });
  doc.font("Helvetica-Bold").fontSize(22).fillColor(INK).text("Condition report");
  if (!inspection.livemode) {
    // Loud on purpose: a printed test report must not pass for a real inspection.
    const [w, h] = [92, 22];
    const x = MARGIN + CONTENT_WIDTH - w;
    doc.roundedRect(x, MARGIN, w, h, 3).fill(GRADE_COLOURS.severe);
    doc
      .font("Helvetica-Bold")
      .fontSize(10)
      .fillColor("#ffffff")
      .text("TEST MODE", x, MARGIN + 6.5, { width: w, align: "center" });
  }
  doc.y = MARGIN + 46;
  fields(doc, [
    ["Inspection", inspection.id],
    ["Reference", inspection.reference ?? "—"],
    ["Created", when(inspection.createdAt)],
    ["Completed", when(inspection.completedAt)],
    ["Mode", inspection.livemode ? "Live" : "Test (made with a test key: not a real inspection)"],
  ]);
}

function vehicle(doc: Doc, report: Report): void {
  const v = report.vehicle;
  section(doc, "Vehicle");
  fields(doc, [
    ["VIN", v.vin],
    ["Make", v.make ?? "—"],
    ["Model", v.model ?? "—"],
    ["Year", v.year === null ? "—" : String(v.year)],
  ]);
  section(doc, "VIN check");
  fields(doc, [
    ["VIN on file", v.vin],
    ["VIN observed", v.vin_observed ?? "Not given by the customer"],
    [
      "Confirmed",
      v.vin_confirmed ? "Yes: the VIN observed is the VIN on file" : "No",
      v.vin_confirmed ? GRADE_COLOURS.none : GRADE_COLOURS.severe,
    ],
  ]);
}

function result(doc: Doc, report: Report): void {
  const { status, reviewed_by, reviewed_at } = report.review;
  const rejected = report.findings.filter((f) => !isCounted(f)).length;
  section(doc, "Result");
  fields(doc, [
    // "none" in green would read as undamaged: until a person has looked, it is not.
    status === "required" && report.grade === "none"
      ? ["Grade", "Needs review: the models placed no damage", GRADE_COLOURS.moderate]
      : ["Grade", words(report.grade), GRADE_COLOURS[report.grade]],
    [
      "Findings",
      rejected > 0 ? `${report.summary.findings}, and ${rejected} rejected by the reviewer (not counted)` : String(report.summary.findings),
    ],
    status === "required"
      ? ["Review", "Needs review", GRADE_COLOURS.moderate]
      : status === "completed"
        ? ["Review", `Reviewed by ${reviewed_by} on ${when(reviewed_at === null ? null : Date.parse(reviewed_at))}`]
        : ["Review", "Not needed"],
    ["Detected by", report.model ? `${report.model.name} ${report.model.version}` : "No damage model"],
  ]);
}

/** Why the report needs a person, or who reviewed it and what they noted; then whether any damage stands. */
function review(doc: Doc, report: Report): void {
  const { status, reasons, note, reviewed_by, reviewed_at } = report.review;
  const line = (text: string, colour = INK, font = "Helvetica-Bold", size = 12) =>
    doc.font(font).fontSize(size).fillColor(colour).text(text, MARGIN, doc.y, { width: CONTENT_WIDTH });
  doc.moveDown(0.6);
  if (status === "required") {
    line("Needs review before acting on this grade:", GRADE_COLOURS.moderate);
    doc.moveDown(0.2);
    for (const reason of reviewReasonWords(reasons)) line(`•  ${reason}`, INK, "Helvetica", 10);
    return;
  }
  if (status === "completed") {
    line(`Reviewed by ${reviewed_by} on ${when(reviewed_at === null ? null : Date.parse(reviewed_at))}.`);
    doc.moveDown(0.2);
    if (note) line(`Note: "${note}"`, INK, "Helvetica", 10);
    if (reasons.length > 0) line("Sent for review because:", MUTED, "Helvetica", 9);
    for (const reason of reviewReasonWords(reasons)) line(`•  ${reason}`, MUTED, "Helvetica", 9);
    doc.moveDown(0.4);
  }
  if (report.summary.findings === 0) line("No damage found.", GRADE_COLOURS.none);
}

/**
 * What a handover desk reads first: the damage new since the baseline, each by its number in the
 * findings below (a worse one with what it was then), and how much was there before.
 */
function newSinceSection(doc: Doc, since: NewSince): void {
  const line = (text: string, colour = INK, font = "Helvetica", size = 10) =>
    doc.font(font).fontSize(size).fillColor(colour).text(text, MARGIN, doc.y, { width: CONTENT_WIDTH });
  const { baseline, items, when: then } = since;
  section(doc, since.title);
  line(`Compared with inspection ${baseline.id}${baseline.reference ? ` (${baseline.reference})` : ""} of ${then}.`, MUTED, "Helvetica", 9);
  doc.moveDown(0.4);
  if (items.length === 0) line(`No new damage since ${then}.`, GRADE_COLOURS.none, "Helvetica-Bold", 11);
  else line(`${items.length} new finding${items.length === 1 ? "" : "s"}:`, GRADE_COLOURS.severe, "Helvetica-Bold", 11);
  for (const item of items) {
    doc.moveDown(0.2);
    line(`•  Finding ${item.n}: ${item.words}${item.kind === "worsened" ? ` (${item.mark.toLowerCase()})` : ""}`, INK, "Helvetica-Bold");
    if (item.was) line(`    Then: ${item.was}`, MUTED, "Helvetica", 9);
  }
  doc.moveDown(0.4);
  const { preexisting, notSeen } = since;
  line(`${preexisting} finding${preexisting === 1 ? " was" : "s were"} there at ${then} already (pre-existing).`);
  if (notSeen > 0)
    line(`${notSeen} of ${then} ${notSeen === 1 ? "is" : "are"} not seen now (repaired, or out of view).`, MUTED, "Helvetica", 9);
}

type Column = { title: string; width: number };
const COLUMNS: Column[] = [
  { title: "#", width: 28 },
  { title: "Type", width: 130 },
  { title: "Part", width: 150 },
  { title: "Severity", width: 100 },
  { title: "Confidence", width: CONTENT_WIDTH - 408 },
];
/** Once a review has marked findings, a last column says what it decided of each. */
const REVIEWED_COLUMNS: Column[] = [
  { title: "#", width: 28 },
  { title: "Type", width: 110 },
  { title: "Part", width: 115 },
  { title: "Severity", width: 62 },
  { title: "Confidence", width: 66 },
  { title: "Review", width: CONTENT_WIDTH - 381 },
];
const ROW_HEIGHT = 20;
/** The cells of a rejected finding's row struck through: type to confidence. */
const STRUCK_CELLS = [1, 2, 3, 4];

function findingsTable(doc: Doc, findings: Finding[]): void {
  const reviewed = findings.some((f) => findingMark(f) !== null);
  const columns = reviewed ? REVIEWED_COLUMNS : COLUMNS;
  section(doc, "Findings", 2 * ROW_HEIGHT);
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
    const cells = [
      String(i + 1),
      words(f.type),
      f.part ? words(f.part) : "—",
      f.severity,
      f.confidence === null ? "—" : percent(f.confidence),
    ];
    if (reviewed) cells.push(findingMark(f) ?? "Not decided");
    // A rejected finding stays listed, struck through: what it said, and that it no longer counts.
    tableRow(doc, columns, cells, { struck: isCounted(f) ? [] : STRUCK_CELLS });
  });
}

function tableRow(doc: Doc, columns: Column[], cells: string[], o: { isHead?: boolean; struck?: number[] } = {}): void {
  const y = doc.y;
  if (o.isHead) doc.rect(MARGIN, y, CONTENT_WIDTH, ROW_HEIGHT).fill(SHADE);
  doc
    .font(o.isHead ? "Helvetica-Bold" : "Helvetica")
    .fontSize(9.5)
    .fillColor(o.struck?.length ? MUTED : INK);
  let x = MARGIN;
  cells.forEach((cell, i) => {
    const width = columns[i]!.width;
    const strike = o.struck?.includes(i) ?? false;
    doc.text(cell, x + 5, y + 6, { width: width - 10, height: ROW_HEIGHT - 6, ellipsis: true, lineBreak: false, strike });
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

function evidencePhoto(doc: Doc, n: number, f: Finding, photo: Picture | null, angle: string | undefined): void {
  const what = `Finding ${n}: ${words(f.type)}${f.part ? ` on the ${words(f.part)}` : ""}, ${f.severity}`;
  const sure = f.confidence === null ? what : `${what}, ${percent(f.confidence)} confidence`;
  const mark = findingMark(f);
  const caption = mark ? `${sure}. ${mark}${isCounted(f) ? "" : ": not counted"}.` : sure;
  const source = [angle ? `Photo: ${words(angle)}` : null, f.id].filter(Boolean).join("  ·  ");
  if (photo) {
    const [w, h] = evidenceSize(photo);
    room(doc, h + 40);
    const [left, top] = [MARGIN + (CONTENT_WIDTH - w) / 2, doc.y];
    doc.image(photo.jpeg, left, top, { width: w, height: h });
    // A reviewer's finding has no evidence photo with its box drawn, as a model's has: drawn here.
    if (f.source === "reviewer" && f.bbox) {
      const [bx, by, bw, bh] = f.bbox as [number, number, number, number];
      doc
        .rect(left + bx * w, top + by * h, bw * w, bh * h)
        .lineWidth(2)
        .strokeColor(REVIEWER_BOX)
        .stroke();
    }
    doc.y = top + h + 6;
  } else {
    room(doc, 40);
  }
  doc.font("Helvetica-Bold").fontSize(10).fillColor(INK).text(caption, MARGIN, doc.y, { width: CONTENT_WIDTH });
  doc
    .font("Helvetica")
    .fontSize(8.5)
    .fillColor(MUTED)
    .text(photo ? source : `${source}  ·  no photo`, { width: CONTENT_WIDTH });
  doc.moveDown(1.2);
}

const GRID_COLUMNS = 3;
const GRID_GAP = 12;
const CELL_WIDTH = (CONTENT_WIDTH - (GRID_COLUMNS - 1) * GRID_GAP) / GRID_COLUMNS;
const THUMB_HEIGHT = Math.round((CELL_WIDTH * 3) / 4);

function photoGrid(doc: Doc, report: Report, thumbnails: (Picture | null)[]): void {
  section(doc, `Photos taken (${report.photos.length})`, THUMB_HEIGHT + 40);
  for (let start = 0; start < report.photos.length; start += GRID_COLUMNS) {
    room(doc, THUMB_HEIGHT + 44);
    const top = doc.y;
    let bottom = top;
    report.photos.slice(start, start + GRID_COLUMNS).forEach((p, i) => {
      const x = MARGIN + i * (CELL_WIDTH + GRID_GAP);
      const thumbnail = thumbnails[start + i];
      if (thumbnail) doc.image(thumbnail.jpeg, x, top, { fit: [CELL_WIDTH, THUMB_HEIGHT], align: "center", valign: "center" });
      else doc.rect(x, top, CELL_WIDTH, THUMB_HEIGHT).fill(SHADE);
      const verdict = p.quality.passed ? "Quality: passed" : "Quality: flagged";
      const problems = p.quality.problems.map(words).join(", ");
      doc
        .font("Helvetica-Bold")
        .fontSize(9.5)
        .fillColor(INK)
        .text(words(p.angle), x, top + THUMB_HEIGHT + 5, { width: CELL_WIDTH });
      doc
        .font("Helvetica")
        .fontSize(8.5)
        .fillColor(p.quality.passed ? GRADE_COLOURS.none : GRADE_COLOURS.moderate)
        .text(problems ? `${verdict}: ${problems}` : verdict, { width: CELL_WIDTH });
      bottom = Math.max(bottom, doc.y);
    });
    doc.x = MARGIN;
    doc.y = bottom + GRID_GAP;
  }
}

function footers(doc: Doc, inspection: InspectionRecord): void {
  const { start, count } = doc.bufferedPageRange();
  for (let i = start; i < start + count; i++) {
    doc.switchToPage(i);
    // Text below the bottom margin would otherwise open a new page.
    doc.page.margins.bottom = 0;
    const y = doc.page.height - 40;
    doc.font("Helvetica").fontSize(8).fillColor(MUTED);
    doc.text(`${SERVICE_NAME}  ·  Condition report ${inspection.id}`, MARGIN, y, { width: CONTENT_WIDTH, lineBreak: false });
    doc.text(`Page ${i - start + 1} of ${count}`, MARGIN, y, { width: CONTENT_WIDTH, align: "right", lineBreak: false });
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
