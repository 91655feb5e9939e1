/** The condition report's page, type and colours, and the few drawing steps its sections share (report-pdf.ts). */
import { formatTimestamp } from "../../core/runtime/time.ts";

export const MARGIN = 48;
export const BOTTOM_MARGIN = 64;
export const A4 = { width: 595.28, height: 841.89 };
export const CONTENT_WIDTH = A4.width - 2 * MARGIN;
export const LABEL_WIDTH = 120;
export const INK = "#111827";
export const MUTED = "#6b7280";
export const RULE = "#d1d5db";
export const SHADE = "#f3f4f6";
export const GRADE_COLOURS = { none: "#15803d", minor: "#a16207", moderate: "#c2410c", severe: "#b91c1c" } as const;

export type Doc = PDFKit.PDFDocument;

export function collect(doc: Doc): Promise<Buffer> {
  const chunks: Buffer[] = [];
  doc.on("data", (chunk: Buffer) => chunks.push(chunk));
  return new Promise((resolve, reject) => {
    doc.on("end", () => resolve(Buffer.concat(chunks)));
    doc.on("error", reject);
  });
}

export const words = (s: string) => s.replaceAll("_", " ");
export const when = (ms: number | null) => formatTimestamp(ms)?.replace("T", " ").replace("Z", " UTC") ?? "—";
export const percent = (c: number) => `${Math.round(c * 100)}%`;

/** Starts a new page unless `height` more points fit above the bottom margin. */
export function room(doc: Doc, height: number): void {
  if (doc.y + height > doc.page.height - doc.page.margins.bottom) doc.addPage();
}

export function section(doc: Doc, title: string, keepWith = 60): void {
  doc.moveDown(1.2);
  room(doc, keepWith + 24);
  doc.font("Helvetica-Bold").fontSize(13).fillColor(INK).text(title, MARGIN);
  const y = doc.y + 2;
  doc
    .moveTo(MARGIN, y)
    .lineTo(MARGIN + CONTENT_WIDTH, y)
    .lineWidth(0.5)
    .strokeColor(RULE)
    .stroke();
  doc.y = y + 8;
}

export function fields(doc: Doc, rows: [string, string, string?][]): void {
  doc.fontSize(10);
  for (const [label, value, colour] of rows) {
    const y = doc.y;
    doc.font("Helvetica").fillColor(MUTED).text(label, MARGIN, y, { width: LABEL_WIDTH });
    doc
      .font("Helvetica-Bold")
      .fillColor(colour ?? INK)
      .text(value, MARGIN + LABEL_WIDTH, y, { width: CONTENT_WIDTH - LABEL_WIDTH });
    doc.moveDown(0.3);
  }
}
