import decode from "heic-decode";

// libheif-js reports a failed decode with console.log, which from a worker still lands on the
// service's stdout, its JSON log stream; the failure itself comes back as the rejected promise.
console.log = () => {};

/**
 * Runs on a worker thread: libheif (compiled to WebAssembly; sharp's prebuilt libvips has no HEVC
 * decoder) decodes synchronously, about 0.35 s for a 12-megapixel photo, which must not stall the
 * API's event loop. The size is read from the header first, so a decompression bomb is refused
 * before any pixel is decoded.
 */
export default async function decodeHeic({
  bytes,
  maxPixels,
}: {
  bytes: Uint8Array;
  maxPixels: number;
}): Promise<{ width: number; height: number; rgba: Uint8ClampedArray }> {
  const images = await decode.all({ buffer: bytes });
  try {
    const primary = images[0]!;
    // "pixel limit", as sharp words its own: ingestPhoto answers both with 413.
    if (primary.width * primary.height > maxPixels)
      throw new Error(`HEIC image of ${primary.width} x ${primary.height} exceeds the pixel limit`);
    const { width, height, data } = await primary.decode();
    return { width, height, rgba: data };
  } finally {
    images.dispose();
  }
}
