import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { chooseLocale, LOCALES } from "../../capture/page/src/locales.ts";
import { formatMessage, placeholders, pluralCategories } from "../../capture/page/src/message-format.ts";
import { hasOverlay } from "../../capture/page/src/overlays.ts";
import { ANGLES } from "../../core/domain/capture-plan.ts";

/**
 * The capture page's catalogues (issue 33, item 2): every language has exactly en.json's keys, each
 * message with the same placeholders, and every plural gives `other` and only categories its
 * language has; the formatter picks the right form and writes numbers for the locale.
 */
const DIR = join(import.meta.dirname, "../../capture/page/messages");
const catalogue = (locale: string): Record<string, string> => JSON.parse(readFileSync(join(DIR, `${locale}.json`), "utf8"));
const en = catalogue("en");

describe("the capture page's catalogues", () => {
  for (const locale of LOCALES) {
    const messages = catalogue(locale);
    const categories = new Set(new Intl.PluralRules(locale).resolvedOptions().pluralCategories as string[]);

    it(`${locale}: en.json's keys, no more, no fewer`, () => {
      expect(Object.keys(messages).sort()).toEqual(Object.keys(en).sort());
    });

    it(`${locale}: each message has en.json's placeholders and well-formed plurals`, () => {
      for (const [key, text] of Object.entries(messages)) {
        expect([...placeholders(text)].sort(), `${locale} ${key}`).toEqual([...placeholders(en[key]!)].sort());
        expect(text.trim(), `${locale} ${key}`).not.toBe("");
        for (const [arg, branches] of pluralCategories(text)) {
          expect(branches.has("other"), `${locale} ${key} ${arg}: other`).toBe(true);
          for (const branch of branches)
            expect(branch.startsWith("=") || categories.has(branch), `${locale} ${key} ${arg}: ${branch}`).toBe(true);
        }
      }
    });
  }

  it("Polish plurals: one, few and many take their own forms", () => {
    const pl = catalogue("pl");
    const full = (n: number) => formatMessage("pl", pl["closeups.full"]!, { max: n });
    expect(full(1)).toBe("Dodano 1 zbliżenie, to maksimum.");
    expect(full(3)).toBe("Dodano 3 zbliżenia, to maksimum.");
    expect(full(8)).toBe("Dodano 8 zbliżeń, to maksimum.");
    expect(full(22)).toBe("Dodano 22 zbliżenia, to maksimum.");
    expect(formatMessage("pl", pl["closeups.nav"]!, { n: 0 })).toBe("Opcjonalne, 0 zdjęć");
  });

  it("English and German: singular and plural, other placeholders inside a branch, numbers for the locale", () => {
    expect(formatMessage("en", en["progress.all"]!, { done: 0, total: 1 })).toBe("All steps (0 of 1 photo)");
    expect(formatMessage("en", en["progress.all"]!, { done: 3, total: 9 })).toBe("All steps (3 of 9 photos)");
    const de = catalogue("de");
    expect(formatMessage("de", de["closeups.full"]!, { max: 1 })).toBe("Sie haben 1 Nahaufnahme hinzugefügt, mehr geht nicht.");
    expect(formatMessage("de", de["progress.label"]!, { n: 1, total: 1234 })).toBe("Schritt 1 von 1.234");
    expect(formatMessage("en", "{n, plural, =0 {none} one {# {what}} other {# {what}s}}", { n: 0, what: "x" })).toBe("none");
    expect(formatMessage("en", "{n, plural, =0 {none} one {# {what}} other {# {what}s}}", { n: 2, what: "x" })).toBe("2 xs");
  });

  it("chooses the first preferred language with a catalogue, by its language subtag, else English", () => {
    expect(chooseLocale(["de-AT", "en-US"])).toBe("de");
    expect(chooseLocale([null, "ja-JP", "pt-BR", "fr"])).toBe("pt");
    expect(chooseLocale(["PL"])).toBe("pl");
    expect(chooseLocale(["ja", "zh-Hans-CN"])).toBe("en");
    expect(chooseLocale([])).toBe("en");
  });

  it("names, prompts and outlines every angle a step can ask for (capture.steps), in every language", () => {
    for (const angle of ANGLES) {
      expect(en[`angle.${angle}`], angle).toBeTruthy();
      expect(en[`prompt.${angle}`], angle).toBeTruthy();
      expect(hasOverlay(angle), angle).toBe(true);
    }
    // Each prompt its own (a copied prompt would send the customer to the wrong place).
    const prompts = (locale: string) => ANGLES.map((angle) => catalogue(locale)[`prompt.${angle}`]);
    for (const locale of LOCALES) expect(new Set(prompts(locale)).size, locale).toBe(ANGLES.length);
  });

  it("leaves an unknown placeholder as written", () => {
    expect(formatMessage("en", "Hello {name}", {})).toBe("Hello {name}");
  });
});
