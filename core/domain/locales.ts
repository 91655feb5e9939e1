/**
 * The languages the capture page speaks, one catalogue each in capture/page/messages, and how one is
 * chosen. Here, not in the page, because the API validates `capture.locale` against the same list.
 * No DOM here, so the unit tests and the service's type check read it as it is.
 */
export const LOCALES = ["en", "de", "fr", "es", "it", "nl", "pt", "pl"] as const;
export type Locale = (typeof LOCALES)[number];

const isLocale = (tag: string): tag is Locale => (LOCALES as readonly string[]).includes(tag);

/** The first of `preferred` whose language subtag has a catalogue ("de-AT" → "de"), else English. */
export function chooseLocale(preferred: readonly (string | null | undefined)[]): Locale {
  for (const tag of preferred) {
    const language = tag?.split(/[-_]/)[0]?.toLowerCase();
    if (language && isLocale(language)) return language;
  }
  return "en";
}
