import sharp from "sharp";

/**
 * Bytes that are not what the capture API takes, as a hostile or careless client sends them under
 * an image/jpeg or image/png label. Shared by the photo-format tests and the hostile-upload bench.
 */

/**
 * "Billion laughs": nested XML entities, a few hundred bytes that expand to thousands of characters of
 * text. librsvg lays out every character: three levels held a libuv thread for tens of seconds.
 */
export function billionLaughsSvg(levels = 3, fan = 10): Buffer {
  let entities = `<!ENTITY e0 "${"lol".repeat(fan)}">`;
  for (let i = 1; i <= levels; i++) entities += `<!ENTITY e${i} "${`&e${i - 1};`.repeat(fan)}">`;
  return Buffer.from(
    `<?xml version="1.0"?><!DOCTYPE svg [${entities}]>` +
      `<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><text x="0" y="20">&e${levels};</text></svg>`,
  );
}

/** An ordinary-looking SVG whose rendering is all work: a large canvas under a wide blur. */
export function largeSvg(side = 3000): Buffer {
  return Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${side}" height="${side}">` +
      `<filter id="f"><feGaussianBlur stdDeviation="80"/></filter>` +
      `<rect width="100%" height="100%" fill="#49c" filter="url(#f)"/></svg>`,
  );
}

export const smallSvg = (): Buffer =>
  Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="640" height="480"><rect width="640" height="480" fill="#888"/></svg>`);

/** A one-page PDF, written out: sharp's prebuilt libvips has no PDF loader, but one built with poppler would render it. */
export function tinyPdf(): Buffer {
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
  ];
  let body = "%PDF-1.4\n";
  const offsets: number[] = [];
  objects.forEach((o, i) => {
    offsets.push(body.length);
    body += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = body.length;
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("")}`;
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(body, "latin1");
}

/** Every hostile kind, by name, made from a real photo where the format carries pixels. */
export async function hostilePhotos(photo: Buffer): Promise<Record<string, Buffer>> {
  const small = sharp(photo).resize(320);
  return {
    svg: smallSvg(),
    "billion-laughs svg": billionLaughsSvg(),
    "large svg": largeSvg(),
    gif: await small.clone().gif().toBuffer(),
    tiff: await small.clone().tiff().toBuffer(),
    pdf: tinyPdf(),
  };
}

/**
 * A legitimate but heavy photo: 7296 × 5472 (39.9 MP, just under the limit) PNG of a real photo
 * scaled up with nearest-neighbour, so it compresses to a few MB and still decodes all 40 MP.
 */
export async function heavyPng(photo: Buffer): Promise<Buffer> {
  return sharp(photo).resize(7296, 5472, { fit: "fill", kernel: "nearest" }).png({ compressionLevel: 6 }).toBuffer();
}
