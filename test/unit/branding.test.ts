import { describe, expect, it } from "vitest";
import {
  checkAccentColor,
  checkDisplayName,
  contrastWithWhite,
  darkenToContrast,
  DISPLAY_NAME_MAX,
  MIN_CONTRAST,
} from "../../core/domain/branding.ts";

/** The account's branding as the dashboard checks it (issue 33, item 3). */
describe("branding", () => {
  it("measures contrast with white as WCAG does", () => {
    expect(contrastWithWhite("#ffffff")).toBeCloseTo(1, 5);
    expect(contrastWithWhite("#000000")).toBeCloseTo(21, 5);
    // WebAIM's contrast checker: #767676 on white is 4.54:1, the lightest grey that passes AA.
    expect(contrastWithWhite("#767676")).toBeCloseTo(4.54, 2);
    expect(contrastWithWhite("#777777")).toBeLessThan(MIN_CONTRAST);
  });

  it("takes a colour white text reads on, in any case, with or without #; empty is none", () => {
    expect(checkAccentColor("#1D4ED8")).toEqual({ ok: true, value: "#1d4ed8" });
    expect(checkAccentColor(" 0b5fff ")).toEqual({ ok: true, value: "#0b5fff" });
    expect(checkAccentColor("#767676")).toEqual({ ok: true, value: "#767676" });
    expect(checkAccentColor("")).toEqual({ ok: true, value: null });
  });

  it("refuses a colour too light for white text, naming its contrast and a darker shade that passes", () => {
    const refused = checkAccentColor("#ffcc00");
    expect(refused.ok).toBe(false);
    const error = (refused as { error: string }).error;
    expect(error).toMatch(/^White text on #ffcc00 has a contrast of 1\.\d\d:1, under the 4\.5:1/);
    const shade = /passes: (#[0-9a-f]{6})\.$/.exec(error)![1]!;
    expect(shade).toBe(darkenToContrast("#ffcc00"));
    expect(contrastWithWhite(shade)).toBeGreaterThanOrEqual(MIN_CONTRAST);
    expect(contrastWithWhite(shade)).toBeLessThan(MIN_CONTRAST + 0.2);
    expect(checkAccentColor(shade)).toEqual({ ok: true, value: shade });
    // The shade keeps the hue: red stays above green, blue at 0.
    const [r, g, b] = [1, 3, 5].map((i) => Number.parseInt(shade.slice(i, i + 2), 16));
    expect(r! > g! && b === 0).toBe(true);
  });

  it("refuses what is not a colour", () => {
    for (const bad of ["red", "#fff", "#12345g", "#1234567", "url(x)", "#000000;color:red"])
      expect(checkAccentColor(bad)).toEqual({
        ok: false,
        error: "Write the accent colour as # and six hexadecimal digits, such as #1d4ed8.",
      });
  });

  it("takes a display name of 1 to 60 characters as people count them, spaces tidied; empty is none", () => {
    expect(checkDisplayName("  Acme   Insurance ")).toEqual({ ok: true, value: "Acme Insurance" });
    expect(checkDisplayName("   ")).toEqual({ ok: true, value: null });
    expect(checkDisplayName("x".repeat(DISPLAY_NAME_MAX))).toEqual({ ok: true, value: "x".repeat(60) });
    // 60 flags are 120 code points and 60 characters.
    expect(checkDisplayName("🇩🇪".repeat(60)).ok).toBe(true);
    // Markup is text: it is shown as typed, escaped, never as HTML.
    expect(checkDisplayName("<b>Acme</b> & Co")).toEqual({ ok: true, value: "<b>Acme</b> & Co" });
    expect(checkDisplayName("x".repeat(61))).toEqual({
      ok: false,
      error: "The display name may be at most 60 characters; this one has 61.",
    });
  });

  it("refuses control characters and direction overrides in a display name", () => {
    for (const bad of ["Acme\u0000", "Acme\u202eecnarusnI", "Acme\u2066x\u2069", "Ac\u0007me"])
      expect(checkDisplayName(bad)).toEqual({
        ok: false,
        error: "The display name must be plain text: no control characters or direction marks.",
      });
  });
});
