import type en from "../messages/en.json";
import { chooseLocale, type Locale } from "./locales.ts";
import { formatMessage, type Params } from "./message-format.ts";

/**
 * Every text the customer reads comes from a message catalogue, one JSON file a language under
 * ../messages, in the ICU MessageFormat subset that message-format.ts reads. Only the chosen
 * language's catalogue is loaded (a chunk of its own, fetched while the session loads); a language
 * is one more file and one more entry in LOCALES (locales.ts), and
 * test/unit/capture-messages.test.ts holds every catalogue to en.json's keys and placeholders.
 */
export type { Locale } from "./locales.ts";
export type MessageKey = keyof typeof en;

/**
 * The page's language: `requested` (the inspection's capture.locale, which the server writes into
 * the page as data-locale and the session also names) first, then the browser's languages.
 */
export function localeFor(requested: string | null): Locale {
  return chooseLocale([requested, ...(navigator.languages?.length ? navigator.languages : [navigator.language])]);
}

/** The language shown: set by useLocale before anything is drawn. */
export let lang: Locale = "en";
let messages: Record<string, string> = {};

const load = (locale: Locale): Promise<Record<string, string>> =>
  import(`../messages/${locale}.json`, { with: { type: "json" } }).then((m: { default: Record<string, string> }) => m.default);

/** Loads `locale`'s catalogue (English if that fails) and makes it the page's language, <html lang> included. */
export async function useLocale(locale: Locale): Promise<void> {
  let shown = locale;
  messages = await load(locale).catch(() => {
    shown = "en";
    return load("en");
  });
  lang = shown;
  document.documentElement.lang = shown;
  document.title = t("app.title");
}

export function t(key: MessageKey, params: Params = {}): string {
  return formatMessage(lang, messages[key] ?? key, params);
}

/** Items as a list in the page's language: "A, B and C" (`and`), or "A, B, C" (`unit`). */
export function listOf(items: string[], type: "and" | "unit" = "and"): string {
  return new Intl.ListFormat(lang, { type: type === "and" ? "conjunction" : "unit", style: type === "and" ? "long" : "short" }).format(
    items,
  );
}

/** A label used inside a sentence: lower-cased, except in German, whose nouns keep their capital. */
export const inSentence = (label: string): string => (lang === "de" ? label : label.toLocaleLowerCase(lang));
