/**
 * Small copies of the photos taken, for the review screen. The capture API gives no photo back to
 * the page, so each is kept here when taken, in sessionStorage under the link's token: a reload in
 * the same tab keeps them; on another device the review shows a placeholder beside the verdict.
 */
const THUMB_SIDE = 240;
const memory = new Map<string, string>();
let prefix = "thumb:";

/** Thumbnails are kept per link, so two inspections opened in one tab never mix. */
export function useThumbsOf(token: string): void {
  prefix = `thumb:${token}:`;
}

/** Keeps a thumbnail of `still` for `key` (a step's angle, or `closeup-<n>`), replacing any earlier one. */
export function keepThumb(key: string, still: HTMLCanvasElement): void {
  const scale = Math.min(1, THUMB_SIDE / Math.max(still.width, still.height));
  const canvas = document.createElement("canvas");
  canvas.width = Math.max(1, Math.round(still.width * scale));
  canvas.height = Math.max(1, Math.round(still.height * scale));
  canvas.getContext("2d")!.drawImage(still, 0, 0, canvas.width, canvas.height);
  const url = canvas.toDataURL("image/jpeg", 0.7);
  memory.set(key, url);
  try {
    sessionStorage.setItem(prefix + key, url);
  } catch {
    // Storage full or refused (a private window): the thumbnail lives as long as the page.
  }
}

export function thumbOf(key: string): string | null {
  const kept = memory.get(key);
  if (kept) return kept;
  try {
    return sessionStorage.getItem(prefix + key);
  } catch {
    return null;
  }
}
