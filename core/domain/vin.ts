/**
 * VIN rules (ISO 3779 with the North American check digit of 49 CFR 565). Pure functions: the
 * decoder that turns a VIN into make, model and year lives in core/vin/.
 */
export const VIN_PATTERN = /^[A-HJ-NPR-Z0-9]{17}$/;

const TRANSLITERATION: Record<string, number> = {
  A: 1,
  B: 2,
  C: 3,
  D: 4,
  E: 5,
  F: 6,
  G: 7,
  H: 8,
  J: 1,
  K: 2,
  L: 3,
  M: 4,
  N: 5,
  P: 7,
  R: 9,
  S: 2,
  T: 3,
  U: 4,
  V: 5,
  W: 6,
  X: 7,
  Y: 8,
  Z: 9,
};
const WEIGHTS = [8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2];

/**
 * What the API takes as a VIN: the VIN in either case, with spaces around it (the other ASCII
 * whitespace that normalizeVin trims is refused there as a control character, and the dashboard's
 * single-line field never sends it). The form alone; the North American check digit (vinProblem) is
 * the rest of the rule. The OpenAPI document gives it as the pattern of `format: vin`.
 */
export const VIN_INPUT_PATTERN = /^ *[A-HJ-NPR-Za-hj-npr-z0-9]{17} *$/;

/**
 * ASCII whitespace trimmed and ASCII letters upper-cased, nothing else: a character that only
 * Unicode folds into the VIN alphabet (`ſ`, `ﬀ`, a no-break space) stays and makes the VIN invalid,
 * so VIN_INPUT_PATTERN says exactly what is accepted.
 */
export function normalizeVin(raw: string): string {
  return raw.replace(/^[ \t\n\v\f\r]+|[ \t\n\v\f\r]+$/g, "").replace(/[a-z]+/g, (letters) => letters.toUpperCase());
}

/** The check digit (position 9) a VIN should carry: `0`–`9` or `X`. */
export function expectedCheckDigit(vin: string): string {
  let sum = 0;
  for (let i = 0; i < 17; i++) {
    const c = vin[i]!;
    const value = c >= "0" && c <= "9" ? Number(c) : (TRANSLITERATION[c] ?? 0);
    sum += value * WEIGHTS[i]!;
  }
  const r = sum % 11;
  return r === 10 ? "X" : String(r);
}

/** North American VINs (first character 1–5) must carry a correct check digit. */
export const requiresCheckDigit = (vin: string): boolean => /^[1-5]/.test(vin);

export type VinProblem = "length" | "alphabet" | "check_digit";

/** Why a normalized VIN is not acceptable, or null when it is. */
export function vinProblem(vin: string): VinProblem | null {
  if (vin.length !== 17) return "length";
  if (!VIN_PATTERN.test(vin)) return "alphabet";
  if (requiresCheckDigit(vin) && vin[8] !== expectedCheckDigit(vin)) return "check_digit";
  return null;
}

export const VIN_PROBLEM_MESSAGES: Record<VinProblem, string> = {
  length: "A VIN has exactly 17 characters.",
  alphabet: "A VIN uses only A-Z and 0-9, without the letters I, O and Q.",
  check_digit: "The VIN's check digit (position 9) does not match the rest of the VIN; check it for a typo.",
};

/** Letters OCR reads where the VIN has a digit, and back. */
const DIGIT_FOR_LETTER: Record<string, string> = { D: "0", B: "8", S: "5", Z: "2", G: "6" };
const LETTER_FOR_DIGIT: Record<string, string> = { "0": "D", "8": "B", "5": "S", "2": "Z", "6": "G" };

/** A valid VIN whose last four characters are digits (the serial part of ISO 3779), unlike a word read off a label. */
const plausible = (vin: string) => vinProblem(vin) === null && /\d{4}$/.test(vin);

/** The run as a VIN: positions 13–17 read as digits, then one letter/digit swap, letter→digit first. */
function repair(run: string): string | null {
  const r = run.slice(0, 12) + run.slice(12).replace(/[DBSZG]/g, (c) => DIGIT_FOR_LETTER[c]!);
  if (plausible(r)) return r;
  for (const swaps of [DIGIT_FOR_LETTER, LETTER_FOR_DIGIT]) {
    for (let i = 0; i < 17; i++) {
      const alt = swaps[r[i]!];
      if (!alt) continue;
      const candidate = r.slice(0, i) + alt + r.slice(i + 1);
      if (plausible(candidate)) return candidate;
    }
  }
  return null;
}

/**
 * The VIN in OCR text: 17-character runs of the VIN alphabet (I, O, Q read as 1, 0, 0), each repaired
 * with what a VIN must be (serial digits, check digit); the first that comes out plausible wins.
 * Failing that, the most VIN-like run, for the customer to correct. Null when nothing looks like a VIN.
 */
export function vinFromOcr(text: string): string | null {
  const cleaned = text.toUpperCase().replace(/I/g, "1").replace(/[OQ]/g, "0");
  const runs = cleaned
    .replace(/[^A-HJ-NPR-Z0-9]+/g, " ")
    .split(" ")
    .flatMap((word) => {
      const out: string[] = [];
      for (let i = 0; i + 17 <= word.length; i++) out.push(word.slice(i, i + 17));
      return out;
    });
  for (const run of runs) {
    const vin = repair(run);
    if (vin) return vin;
  }
  const digits = (run: string) => run.replace(/\D/g, "").length;
  return runs.filter((run) => digits(run) >= 4).sort((a, b) => digits(b) - digits(a))[0] ?? null;
}
