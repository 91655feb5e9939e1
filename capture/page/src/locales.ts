// The languages and how one is chosen live in core (the API validates capture.locale against them).
export { chooseLocale, LOCALES, type Locale } from "../../../core/domain/locales.ts";
