/**
 * Whose capture page it is (issue 33, item 3): the account's display name, accent colour and logo,
 * set in the dashboard and shown by the capture page ("Acme Insurance asks for 9 photos of …").
 * One branding per account, for its test and live capture pages alike (as Stripe's branding is).
 * Pure: the dashboard checks what is typed with it, the stores keep what it let through.
 */

/** The account's logo as stored: a PNG the service made (logo.ts), in the blob store under logoBlobKey(id). */
export type StoredLogo = { id: string; width: number; height: number; bytes: number };

export type Branding = {
  /** Plain text, 1 to DISPLAY_NAME_MAX characters; null: none (the capture page names no one). */
  displayName: string | null;
  /** `#rrggbb`, lower case, that white text on it reads at WCAG AA (4.5:1) at least; null: the page's own blue. */
  accentColor: string | null;
  logo: StoredLogo | null;
  updatedAt: number;
};

export const NO_BRANDING: Branding = { displayName: null, accentColor: null, logo: null, updatedAt: 0 };

export const DISPLAY_NAME_MAX = 60;
/** WCAG 2.2 AA for normal text (1.4.3): the capture page writes white text on the accent colour, and the colour on white. */
export const MIN_CONTRAST = 4.5;

/** Control characters, line and paragraph separators, and bidirectional overrides and isolates (a name that reorders the text around it). */
const NOT_PLAIN_TEXT = /[\p{Cc}\p{Zl}\p{Zp}\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;

const graphemes = (text: string) => [...new Intl.Segmenter("en", { granularity: "grapheme" }).segment(text)].length;

/**
 * The display name as typed, made plain (NFC, spaces collapsed and trimmed), or why it is refused.
 * Empty is allowed and means none. Length counts characters as people see them (graphemes).
 */
export function checkDisplayName(typed: string): { ok: true; value: string | null } | { ok: false; error: string } {
  const value = typed
    .normalize("NFC")
    .replace(/[\s\u00a0]+/gu, " ")
    .trim();
  if (value === "") return { ok: true, value: null };
  if (NOT_PLAIN_TEXT.test(value))
    return { ok: false, error: "The display name must be plain text: no control characters or direction marks." };
  const length = graphemes(value);
  if (length > DISPLAY_NAME_MAX)
    return { ok: false, error: `The display name may be at most ${DISPLAY_NAME_MAX} characters; this one has ${length}.` };
  return { ok: true, value };
}

const channel = (hex: string, at: number) => Number.parseInt(hex.slice(at, at + 2), 16);
const rgbOf = (hex: string): [number, number, number] => [channel(hex, 1), channel(hex, 3), channel(hex, 5)];
const hexOf = (rgb: number[]) => `#${rgb.map((c) => c.toString(16).padStart(2, "0")).join("")}`;

/** WCAG's relative luminance of an sRGB colour, 0 (black) to 1 (white). */
export function luminance(hex: string): number {
  const [r, g, b] = rgbOf(hex).map((c) => {
    const s = c / 255;
    return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/** WCAG's contrast ratio of the colour with white, 1 to 21. */
export const contrastWithWhite = (hex: string): number => 1.05 / (luminance(hex) + 0.05);

/**
 * The lightest colour of the same hue that reaches MIN_CONTRAST with white: the colour's channels
 * scaled down together (a darker shade of it), as a suggestion where a colour is refused.
 */
export function darkenToContrast(hex: string): string {
  const rgb = rgbOf(hex);
  const scaled = (f: number) => hexOf(rgb.map((c) => Math.floor(c * f)));
  let [low, high] = [0, 1];
  for (let i = 0; i < 20; i++) {
    const mid = (low + high) / 2;
    if (contrastWithWhite(scaled(mid)) >= MIN_CONTRAST) low = mid;
    else high = mid;
  }
  return scaled(low);
}

/**
 * The accent colour as typed (`#rrggbb` or `rrggbb`, any case), or why it is refused. A colour that
 * white text would not read on is refused, not adjusted: a brand's colour is the brand's to choose,
 * so the refusal names its contrast and the nearest darker shade that passes. Empty: none.
 */
export function checkAccentColor(typed: string): { ok: true; value: string | null } | { ok: false; error: string } {
  const trimmed = typed.trim().toLowerCase();
  if (trimmed === "") return { ok: true, value: null };
  const value = trimmed.startsWith("#") ? trimmed : `#${trimmed}`;
  if (!/^#[0-9a-f]{6}$/.test(value))
    return { ok: false, error: "Write the accent colour as # and six hexadecimal digits, such as #1d4ed8." };
  const contrast = contrastWithWhite(value);
  if (contrast < MIN_CONTRAST)
    return {
      ok: false,
      error: `White text on ${value} has a contrast of ${(Math.floor(contrast * 100) / 100).toFixed(2)}:1, under the ${MIN_CONTRAST}:1 that buttons need to stay readable (WCAG AA). A darker shade of it that passes: ${darkenToContrast(value)}.`,
    };
  return { ok: true, value };
}

/** Where the logo lives in the blob store, by its id (the id is random: the URL names no account). */
export const logoBlobKey = (id: string) => `account-logos/${id}.png`;
/** The logo's path, under the capture page's origin (its CSP loads images from 'self' only). */
export const logoPath = (id: string) => `/capture/logos/${id}.png`;
export const LOGO_ID = /^logo_[a-z0-9]{24}$/;
