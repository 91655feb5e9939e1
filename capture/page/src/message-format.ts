/**
 * The part of ICU MessageFormat the capture page's catalogues use, on the platform's Intl (no
 * library: `intl-messageformat` is not among the project's dependencies, and this keeps the bundle
 * small). Supported:
 * - `{name}`: the parameter; a number is written with Intl.NumberFormat for the locale.
 * - `{name, plural, one {…} few {…} many {…} other {…}}`: the branch Intl.PluralRules picks for the
 *   locale (`=0`-style exact branches first), `other` when that category is absent; `#` in a branch
 *   is the number, formatted. Branches may hold `{name}` placeholders.
 * Anything else in braces is left as written. Pure, so the unit tests run it under Node.
 */

export type Params = Record<string, string | number>;

const numbers = new Map<string, Intl.NumberFormat>();
const plurals = new Map<string, Intl.PluralRules>();
const cached = <T>(map: Map<string, T>, locale: string, make: () => T): T => map.get(locale) ?? map.set(locale, make()).get(locale)!;

export const formatNumber = (locale: string, n: number): string => cached(numbers, locale, () => new Intl.NumberFormat(locale)).format(n);

/** The index of the `}` closing the `{` at `open`, or -1. */
function closing(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === "{") depth++;
    else if (text[i] === "}" && --depth === 0) return i;
  }
  return -1;
}

/** The top-level pieces of a message: text, or the inside of a `{…}`. */
function* pieces(text: string): Generator<{ text: string } | { arg: string }> {
  let at = 0;
  while (at < text.length) {
    const open = text.indexOf("{", at);
    const close = open === -1 ? -1 : closing(text, open);
    if (close === -1) {
      yield { text: text.slice(at) };
      return;
    }
    if (open > at) yield { text: text.slice(at, open) };
    yield { arg: text.slice(open + 1, close) };
    at = close + 1;
  }
}

const PLURAL = /^\s*(\w+)\s*,\s*plural\s*,([\s\S]*)$/;

/** A plural argument's branches by selector (`one`, `few`, `=0`…). */
function branches(body: string): Map<string, string> {
  const found = new Map<string, string>();
  let at = 0;
  for (;;) {
    const selector = /^\s*(=\d+|\w+)\s*\{/.exec(body.slice(at));
    if (!selector) return found;
    const open = at + selector[0].length - 1;
    const close = closing(body, open);
    if (close === -1) return found;
    found.set(selector[1]!, body.slice(open + 1, close));
    at = close + 1;
  }
}

/** `text` with its placeholders filled in for `locale`. */
export function formatMessage(locale: string, text: string, params: Params = {}): string {
  let out = "";
  for (const piece of pieces(text)) {
    if ("text" in piece) {
      out += piece.text;
      continue;
    }
    const plural = PLURAL.exec(piece.arg);
    if (plural) {
      const n = Number(params[plural[1]!]);
      const options = branches(plural[2]!);
      const category = cached(plurals, locale, () => new Intl.PluralRules(locale)).select(n);
      const branch = options.get(`=${n}`) ?? options.get(category) ?? options.get("other") ?? "";
      out += formatMessage(locale, branch.replaceAll("#", formatNumber(locale, n)), params);
      continue;
    }
    const name = piece.arg.trim();
    const value = params[name];
    out += value === undefined ? `{${piece.arg}}` : typeof value === "number" ? formatNumber(locale, value) : value;
  }
  return out;
}

/** The parameter names a message uses (plural arguments and the placeholders in their branches included). */
export function placeholders(text: string): Set<string> {
  const names = new Set<string>();
  for (const piece of pieces(text)) {
    if ("text" in piece) continue;
    const plural = PLURAL.exec(piece.arg);
    if (!plural) {
      names.add(piece.arg.trim());
      continue;
    }
    names.add(plural[1]!);
    for (const branch of branches(plural[2]!).values()) for (const name of placeholders(branch)) names.add(name);
  }
  return names;
}

/** The plural categories a message's plural arguments give a branch for, by argument. */
export function pluralCategories(text: string): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  for (const piece of pieces(text)) {
    const plural = "arg" in piece ? PLURAL.exec(piece.arg) : null;
    if (plural) found.set(plural[1]!, new Set(branches(plural[2]!).keys()));
  }
  return found;
}
