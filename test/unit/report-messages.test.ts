import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as fontkit from "fontkit";
import { IntlMessageFormat } from "intl-messageformat";
import { describe, expect, it } from "vitest";
import { FONT_FILES } from "../../api/pdf/pdf-layout.ts";
import { formatMessage, placeholders, pluralCategories } from "../../capture/page/src/message-format.ts";
import { ANGLES } from "../../core/domain/capture-plan.ts";
import { CLOSEUP, VEHICLE_PARTS } from "../../core/domain/closeups.ts";
import { GRADES, SEVERITIES } from "../../core/domain/grading.ts";
import { LOCALES } from "../../core/domain/locales.ts";
import { REVIEWER_TYPES } from "../../core/schemas/review.ts";
import { QUALITY_PROBLEMS, REVIEW_REASONS } from "../../core/schemas/report.ts";
import { REPORT_CATALOGUES, reportWords } from "../../core/views/report-words.ts";

/**
 * The report's catalogues (issue 33, item 2: the PDF and the shared link's page): every language
 * has exactly en.json's keys, each message parses as ICU MessageFormat with en.json's arguments
 * and plural forms its language has, every word of the domain is in them, and the PDF's font has
 * a glyph for every character any of them (or Intl's dates and numbers for their locale) prints.
 */
const en = REPORT_CATALOGUES.en;

type Ast = ReturnType<IntlMessageFormat["getAst"]>;
/** The arguments a message takes, and the plural categories each plural argument gives. */
function argumentsOf(ast: Ast, found = new Map<string, Set<string> | null>()): Map<string, Set<string> | null> {
  for (const node of ast) {
    if (!("value" in node) || typeof node.value !== "string" || node.type === 0) continue;
    if ("options" in node) {
      const branches = node.options as Record<string, { value: Ast }>;
      const isPlural = "pluralType" in node;
      found.set(node.value, isPlural ? new Set(Object.keys(branches)) : (found.get(node.value) ?? null));
      for (const branch of Object.values(branches)) argumentsOf(branch.value, found);
    } else if (!found.has(node.value)) found.set(node.value, null);
  }
  return found;
}

const parse = (locale: string, text: string) => new IntlMessageFormat(text, locale).getAst();

describe("the report's catalogues", () => {
  for (const locale of LOCALES) {
    const messages = REPORT_CATALOGUES[locale];
    const categories = new Set(new Intl.PluralRules(locale).resolvedOptions().pluralCategories as string[]);

    it(`${locale}: en.json's keys, no more, no fewer`, () => {
      expect(Object.keys(messages).sort()).toEqual(Object.keys(en).sort());
    });

    it(`${locale}: each message parses, takes en.json's arguments, and gives the plural forms its language has`, () => {
      for (const [key, text] of Object.entries(messages)) {
        expect(text.trim(), `${locale} ${key}`).not.toBe("");
        const args = argumentsOf(parse(locale, text));
        const english = argumentsOf(parse("en", en[key as keyof typeof en]));
        expect([...args.keys()].sort(), `${locale} ${key}`).toEqual([...english.keys()].sort());
        for (const [arg, branches] of args) {
          if (!branches) continue;
          expect(branches.has("other"), `${locale} ${key} ${arg}: other`).toBe(true);
          for (const branch of branches)
            expect(branch.startsWith("=") || categories.has(branch), `${locale} ${key} ${arg}: ${branch}`).toBe(true);
        }
      }
    });
  }

  it("words every damage type, part, angle, severity, grade, quality problem and review reason", () => {
    const words: [string, readonly string[]][] = [
      ["damage", REVIEWER_TYPES],
      ["part", VEHICLE_PARTS],
      ["angle", [...ANGLES, CLOSEUP]],
      ["severity", SEVERITIES],
      ["grade", GRADES],
      ["problem", QUALITY_PROBLEMS],
      ["reason", REVIEW_REASONS],
    ];
    for (const [prefix, values] of words)
      for (const value of values) expect(en, `${prefix}.${value}`).toHaveProperty([`${prefix}.${value}`]);
  });

  it("formats plurals, numbers and dates for the locale", () => {
    const pl = reportWords("pl");
    expect(pl.t("since.new_count", { n: 1 })).toBe("1 nowe ustalenie:");
    expect(pl.t("since.new_count", { n: 3 })).toBe("3 nowe ustalenia:");
    expect(pl.t("since.new_count", { n: 5 })).toBe("5 nowych ustaleń:");
    expect(pl.t("since.new_count", { n: 22 })).toBe("22 nowe ustalenia:");
    const de = reportWords("de");
    expect(de.t("section.photos_taken", { n: 1234 })).toBe("Aufgenommene Fotos (1.234)");
    expect(de.percent(0.87)).toBe("87\u00a0%");
    const at = Date.UTC(2026, 10, 23, 14, 5, 33);
    expect(de.when(at)).toBe("23. November 2026 um 14:05 UTC");
    expect(pl.when(at)).toBe("23 listopada 2026 14:05 UTC");
    // English keeps the dashboard's timestamps (UTC, as webhook logs have them) and its words.
    expect(reportWords("en").when(at)).toBe("2026-11-23 14:05:33 UTC");
    expect(reportWords("en").minutes(at)).toBe("2026-11-23 14:05 UTC");
    expect(reportWords("en").percent(0.87)).toBe("87%");
  });
});

describe("the PDF's font", () => {
  const fonts = Object.entries(FONT_FILES).map(([style, file]) => [style, fontkit.openSync(file) as fontkit.Font] as const);
  /** Every character the report can print in `locale`: its catalogue, and Intl's dates, numbers and lists. */
  const printed = (locale: (typeof LOCALES)[number]) => {
    const w = reportWords(locale);
    const at = Date.UTC(2026, 8, 30, 23, 59);
    const samples = [
      ...Object.values(REPORT_CATALOGUES[locale]),
      w.when(at),
      w.percent(0.5),
      w.list(["a", "b", "c"]),
      new Intl.NumberFormat(locale).format(1234567.5),
      // Every month's name, in the forms a date takes.
      ...Array.from({ length: 12 }, (_, m) => w.when(Date.UTC(2026, m, 1))),
      "•·—…",
    ];
    return new Set([...samples.join("")].map((c) => c.codePointAt(0)!));
  };

  for (const locale of LOCALES)
    it(`has a glyph for every character of the ${locale} report, regular and bold`, () => {
      for (const [style, font] of fonts) {
        const missing = [...printed(locale)].filter((cp) => !font.hasGlyphForCodePoint(cp));
        expect(
          missing.map((cp) => `U+${cp.toString(16).toUpperCase().padStart(4, "0")} ${String.fromCodePoint(cp)}`),
          style,
        ).toEqual([]);
      }
    });

  it("covers Latin (Polish, Czech, Hungarian, Romanian, Turkish, Icelandic, Vietnamese…), Greek and Cyrillic, and not CJK, Arabic, Hebrew, Thai, Armenian, Georgian or emoji (as the docs say)", () => {
    const covers = (text: string) => fonts.every(([, font]) => [...text].every((c) => font.hasGlyphForCodePoint(c.codePointAt(0)!)));
    expect(covers("ąćęłńóśźż ßäöü œçéèàù ãõáí ñ ĳ řšžčěů őű ğışİ șțăâî þðæ ắờự")).toBe(true);
    expect(covers("αβγδΩ")).toBe(true);
    expect(covers("жщЯёЇ")).toBe(true);
    for (const other of ["中", "日本", "한", "ب", "א", "ก", "Ա", "ა", "😀"]) expect(covers(other), other).toBe(false);
  });
});

/**
 * The capture page keeps its own small formatter (capture/page/src/message-format.ts) rather than
 * FormatJS's: intl-messageformat with its parser is 9.97 kB gzipped in the page's build (esbuild,
 * minified, es2022) against 0.65 kB, and would nearly double the 12.7 kB the page loads before its
 * first step. So the subset it reads is held here to FormatJS's answer, message by message. One
 * difference is by design: the page's `{n}` writes a number for the locale, as ICU's `{n, number}`
 * does (ICU's bare `{n}` writes it as it is: "1234" where German writes "1.234").
 */
describe("the capture page's formatter", () => {
  const dir = join(import.meta.dirname, "../../capture/page/messages");
  for (const locale of LOCALES)
    it(`formats every ${locale} capture message as intl-messageformat does`, () => {
      const messages: Record<string, string> = JSON.parse(readFileSync(join(dir, `${locale}.json`), "utf8"));
      for (const [key, text] of Object.entries(messages)) {
        const plurals = pluralCategories(text);
        for (const n of [0, 1, 2, 3, 5, 12, 22, 1234]) {
          const params = Object.fromEntries(
            [...placeholders(text)].map((name) => [name, plurals.has(name) || /^(n|total|done|max|count)$/.test(name) ? n : `«${name}»`]),
          );
          const icu = text.replace(/\{(\w+)\}/g, (whole, name: string) => (typeof params[name] === "number" ? `{${name}, number}` : whole));
          expect(formatMessage(locale, text, params), `${locale} ${key} ${n}`).toBe(
            String(new IntlMessageFormat(icu, locale).format(params)),
          );
        }
      }
    });
});
