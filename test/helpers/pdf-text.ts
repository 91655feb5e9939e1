import { decodePDFRawStream, PDFArray, PDFDict, PDFDocument, PDFName, PDFNumber, type PDFPage, PDFRawStream } from "pdf-lib";

/** A PDF as pdf-lib reads it: its pages, the images they embed, their text and the Info dict. */
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
    text: pdf.getPages().map(pageText),
    title: pdf.getTitle(),
    subject: pdf.getSubject(),
  };
}

/**
 * A page's text, one TJ operator a line: pdfkit writes Helvetica's text as hex strings of WinAnsi
 * codes inside TJ arrays, split where it kerns; joined again, they give the text as laid out.
 */
function pageText(page: PDFPage): string {
  const contents = page.node.Contents();
  const streams = contents instanceof PDFArray ? contents.asArray().map((ref) => page.doc.context.lookup(ref)) : [contents];
  const source = streams
    .filter((s): s is PDFRawStream => s instanceof PDFRawStream)
    .map((s) => Buffer.from(decodePDFRawStream(s).decode()).toString("latin1"))
    .join("\n");
  return [...source.matchAll(/\[([^\]]*)\]\s*TJ/g)]
    .map(([, array]) => [...array!.matchAll(/<([0-9a-fA-F]*)>/g)].map(([, hex]) => Buffer.from(hex!, "hex").toString("latin1")).join(""))
    .join("\n");
}
