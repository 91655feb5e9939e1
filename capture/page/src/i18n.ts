import en from "../messages/en.json";

/**
 * Every text the customer reads comes from a message catalogue. A second language is one more JSON
 * file with the same keys, added here; nothing else changes.
 */
const CATALOGUES: Record<string, Record<string, string>> = { en };

export type MessageKey = keyof typeof en;

export const lang = (navigator.languages ?? [navigator.language]).map((l) => l.slice(0, 2)).find((l) => l in CATALOGUES) ?? "en";
const messages = CATALOGUES[lang]!;
document.documentElement.lang = lang;

export function t(key: MessageKey, params: Record<string, string | number> = {}): string {
  const text = messages[key] ?? en[key];
  return text.replace(/\{(\w+)\}/g, (_, name: string) => String(params[name] ?? `{${name}}`));
}
