/** The condition report's page, type and colours, and the few drawing steps its sections share (report-pdf.ts). */
import { createRequire } from "node:module";

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

/**
 * The type: Noto Sans (SIL Open Font License 1.1, from the @expo-google-fonts/noto-sans package),
 * embedded and subset by pdfkit, in place of the PDF's standard Helvetica, whose WinAnsi encoding
 * has no ą, ł, ő, œ… Noto Sans covers Latin (with its extensions and Vietnamese), Greek and
 * Cyrillic, not CJK, Arabic, Hebrew, Thai and other scripts: docs/capture-and-dashboard.md, and
 * test/unit/report-messages.test.ts checks every character the catalogues print.
 */
const fontFile = (style: string) => createRequire(import.meta.url).resolve(`@expo-google-fonts/noto-sans/${style}/NotoSans_${style}.ttf`);
export const FONT_FILES = { regular: fontFile("400Regular"), bold: fontFile("700Bold") } as const;
export const FONT = "NotoSans";
export const BOLD = "NotoSans-Bold";

/** Whose report it is (core/domain/branding.ts): the account's name, logo and accent colour, or the product's own look. */
export type Look = {
  /** Above the title and in every footer. */
  name: string;
  /** The PNG the service stored, or null. */
  logo: Buffer | null;
  /** Section headings. */
  heading: string;
  /** The rules under them. */
  rule: string;
};

export function collect(doc: Doc): Promise<Buffer> {
  const chunks: Buffer[] = [];
  doc.on("data", (chunk: Buffer) => chunks.push(chunk));
  return new Promise((resolve, reject) => {
    doc.on("end", () => resolve(Buffer.concat(chunks)));
    doc.on("error", reject);
  });
}

/** Starts a new page unless `height` more points fit above the bottom margin. */
export function room(doc: Doc, height: number): void {
  if (doc.y + height > doc.page.height - doc.page.margins.bottom) doc.addPage();
}

export function section(doc: Doc, look: Look, title: string, keepWith = 60): void {
  doc.moveDown(1.2);
  room(doc, keepWith + 24);
  doc.font(BOLD).fontSize(13).fillColor(look.heading).text(title, MARGIN);
  const y = doc.y + 2;
  doc
    .moveTo(MARGIN, y)
    .lineTo(MARGIN + CONTENT_WIDTH, y)
    .lineWidth(0.5)
    .strokeColor(look.rule)
    .stroke();
  doc.y = y + 8;
}

export function fields(doc: Doc, rows: [string, string, string?][]): void {
  doc.fontSize(10);
  for (const [label, value, colour] of rows) {
    const y = doc.y;
    doc.font(FONT).fillColor(MUTED).text(label, MARGIN, y, { width: LABEL_WIDTH });
    doc
      .font(BOLD)
      .fillColor(colour ?? INK)
      .text(value, MARGIN + LABEL_WIDTH, y, { width: CONTENT_WIDTH - LABEL_WIDTH });
    doc.moveDown(0.3);
  }
}
