import { IntlMessageFormat } from "intl-messageformat";
import { chooseLocale, type Locale } from "../domain/locales.ts";
import { formatTimestamp } from "../runtime/time.ts";
import type { Finding, ReviewReason } from "../schemas/report.ts";
import de from "./messages/de.json" with { type: "json" };
import en from "./messages/en.json" with { type: "json" };
import es from "./messages/es.json" with { type: "json" };
import fr from "./messages/fr.json" with { type: "json" };
import it from "./messages/it.json" with { type: "json" };
import nl from "./messages/nl.json" with { type: "json" };
import pl from "./messages/pl.json" with { type: "json" };
import pt from "./messages/pt.json" with { type: "json" };

/**
 * The condition report in people's words, in the languages the capture page speaks (issue 33,
 * item 2): the PDF and the shared link's page read every word here, the domain's too (damage types,
 * parts, angles, severities, grades, quality problems, review reasons), each written once a
 * language in ./messages/<locale>.json as ICU MessageFormat and formatted by FormatJS's
 * intl-messageformat. English is the dashboard's language as well, so its catalogue keeps the
 * words the dashboard has always shown ("glass shatter on the front bumper, minor").
 */
export type ReportKey = keyof typeof en;
export type Catalogue = Record<ReportKey, string>;
export type Params = Record<string, string | number>;

export const REPORT_CATALOGUES: Record<Locale, Catalogue> = { en, de, fr, es, it, nl, pt, pl };

export type ReportWords = {
  locale: Locale;
  t(key: ReportKey, params?: Params): string;
  /** A moment: "2026-11-23 14:05:33 UTC" in English (as the dashboard and webhook logs write it), Intl's long date in the others. */
  when(ms: number | null | undefined): string;
  /** The same to the minute: what a desk compares. */
  minutes(ms: number | null | undefined): string;
  percent(x: number | null | undefined): string;
  damage(type: string): string;
  part(part: string | null | undefined): string;
  angle(angle: string): string;
  severity(severity: string): string;
  grade(grade: string): string;
  problem(problem: string): string;
  reason(reason: ReviewReason): string;
  /** Items as a list: "A, B and C", "A, B und C". */
  list(items: string[]): string;
};

/** The language of an inspection's report: its capture.locale where one was asked for, else English. */
export const reportLocale = (inspection: { capture: { locale: string | null } }): Locale => chooseLocale([inspection.capture.locale]);

const DASH = "—";
const made = new Map<Locale, ReportWords>();

/** The report's words in `locale` (made once a language; every message compiled on first use). */
export function reportWords(locale: Locale): ReportWords {
  const cached = made.get(locale);
  if (cached) return cached;
  const catalogue = REPORT_CATALOGUES[locale];
  const compiled = new Map<string, IntlMessageFormat>();
  const t = (key: ReportKey, params: Params = {}): string => {
    let message = compiled.get(key);
    if (!message) {
      message = new IntlMessageFormat(catalogue[key], locale);
      compiled.set(key, message);
    }
    return String(message.format(params));
  };
  // Unknown to the catalogue (a value added to the schema before its words): as the API names it.
  const word = (prefix: string, value: string) => (catalogue as Record<string, string>)[`${prefix}.${value}`] ?? value.replaceAll("_", " ");
  const percents = new Intl.NumberFormat(locale, { style: "percent", maximumFractionDigits: 0 });
  const dates = new Intl.DateTimeFormat(locale, {
    day: "numeric",
    month: "long",
    year: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    timeZone: "UTC",
    timeZoneName: "short",
  });
  const lists = new Intl.ListFormat(locale, { type: "conjunction" });
  const iso = (ms: number, to: number) => `${formatTimestamp(ms)!.replace("T", " ").slice(0, to)} UTC`;
  const words: ReportWords = {
    locale,
    t,
    when: (ms) => (ms === null || ms === undefined ? DASH : locale === "en" ? iso(ms, 19) : dates.format(ms)),
    minutes: (ms) => (ms === null || ms === undefined ? DASH : locale === "en" ? iso(ms, 16) : dates.format(ms)),
    percent: (x) => (x === null || x === undefined ? DASH : percents.format(x)),
    damage: (type) => word("damage", type),
    part: (part) => (part ? word("part", part) : DASH),
    angle: (angle) => word("angle", angle),
    severity: (severity) => word("severity", severity),
    grade: (grade) => word("grade", grade),
    problem: (problem) => word("problem", problem),
    reason: (reason) => word("reason", reason),
    list: (items) => lists.format(items),
  };
  made.set(locale, words);
  return words;
}

export const ENGLISH = reportWords("en");

/** "dent on the front bumper, minor" in the report's language. */
export const findingWords = (f: Pick<Finding, "type" | "part" | "severity">, w: ReportWords = ENGLISH): string =>
  f.part
    ? w.t("finding.words", { type: w.damage(f.type), part: w.part(f.part), severity: w.severity(f.severity) })
    : w.t("finding.words_no_part", { type: w.damage(f.type), severity: w.severity(f.severity) });
