import { decodePDFRawStream, PDFArray, PDFDict, PDFDocument, PDFName, PDFNumber, type PDFPage, PDFRawStream } from "pdf-lib";
import { getDocument } from "pdfjs-dist/legacy/build/pdf.mjs";

/**
 * A PDF as pdf-lib reads it (its pages, the images they embed, the Info dict) and its text as
 * Mozilla's PDF.js reads it: the report's fonts are embedded subsets, whose glyph codes only the
 * font's ToUnicode map turns back into text.
 */
export async function readPdf(bytes: Buffer) {
  const pdf = await PDFDocument.load(bytes);
  const images = new Map<string, { width: number; height: number }>();
  for (const page of pdf.getPages()) {
    const xobjects = page.node.Resources()?.lookupMaybe(PDFName.of("XObject"), PDFDict);
    for (const [, ref] of xobjects?.entries() ?? []) {
      const stream = pdf.context.lookup(ref);
      if (!(stream instanceof PDFRawStream) || stream.dict.get(PDFName.of("Subtype")) !== PDFName.of("Image")) continue;
      const size = (name: string) => stream.dict.lookup(PDFName.of(name), PDFNumber).asNumber();
      images.set(ref.toString(), { width: size("Width"), height: size("Height") });
    }
  }
  return {
    pages: pdf.getPageCount(),
    images: [...images.values()],
    text: await pagesText(bytes),
    colours: new Set(pdf.getPages().flatMap(colours)),
    title: pdf.getTitle(),
    subject: pdf.getSubject(),
    author: pdf.getAuthor(),
  };
}

/** The RGB colours a page paints or strokes with (`r g b scn` in pdfkit's DeviceRGB, `rg`, `RG`), as #rrggbb. */
function colours(page: PDFPage): string[] {
  const contents = page.node.Contents();
  const streams = contents instanceof PDFArray ? contents.asArray().map((ref) => page.doc.context.lookup(ref)) : [contents];
  const source = streams
    .filter((s): s is PDFRawStream => s instanceof PDFRawStream)
    .map((s) => Buffer.from(decodePDFRawStream(s).decode()).toString("latin1"))
    .join("\n");
  const hex = (c: string) =>
    Math.round(Number(c) * 255)
      .toString(16)
      .padStart(2, "0");
  return [...source.matchAll(/([\d.]+) ([\d.]+) ([\d.]+) (?:rg|RG|scn|SCN)\b/g)].map(([, r, g, b]) => `#${hex(r!)}${hex(g!)}${hex(b!)}`);
}

/** Each page's text, one line a piece of text pdfkit wrote (a line of a paragraph, a cell, a label). */
async function pagesText(bytes: Buffer): Promise<string[]> {
  const pdf = await getDocument({ data: new Uint8Array(bytes), useSystemFonts: false }).promise;
  const pages: string[] = [];
  for (let n = 1; n <= pdf.numPages; n++) {
    const content = await (await pdf.getPage(n)).getTextContent();
    pages.push(
      content.items
        .map((item) => ("str" in item ? item.str : ""))
        .filter((text) => text.trim() !== "")
        .join("\n"),
    );
  }
  await pdf.cleanup();
  return pages;
}
