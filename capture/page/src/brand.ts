import type { Session } from "./api.ts";
import { h } from "./dom.ts";
import { t } from "./i18n.ts";

const COLOR = /^#[0-9a-f]{6}$/;

/** "2021 Volkswagen Golf", or null where the vehicle on file names none of it. */
const vehicleName = (v: Session["vehicle"]) => [v.year, v.make, v.model].filter(Boolean).join(" ") || null;

/**
 * Whose page it is (the account's branding, set in the dashboard): its colour on the buttons and the
 * progress bar, and a header above the steps with its logo and "Acme Insurance asks for 9 photos of
 * your 2021 Volkswagen Golf". Nothing at all where the account set none: the page as it always was.
 *
 * The colour goes in as a custom property through the CSSOM (style.setProperty), which the page's
 * CSP (style-src 'self', no inline style) allows, and only as #rrggbb, whatever the session says.
 * The logo is loaded by its path on this origin (img-src 'self').
 */
export function applyBranding(session: Session): void {
  const account = session.account;
  if (!account) return;
  if (account.accent_color && COLOR.test(account.accent_color)) {
    document.documentElement.style.setProperty("--accent", account.accent_color);
    document.documentElement.style.setProperty("--progress", account.accent_color);
  }
  const logo = account.logo_url ? logoImage(account.logo_url) : null;
  const name = account.display_name?.trim() || null;
  if (!logo && !name) return;
  const required = session.steps.filter((s) => s.required).length;
  const vehicle = vehicleName(session.vehicle);
  const line =
    name &&
    h(
      "p",
      { class: "asks" },
      vehicle ? t("brand.asks", { name, n: required, vehicle }) : t("brand.asks_vehicle_unknown", { name, n: required }),
    );
  document.body.prepend(h("header", { class: "brand" }, logo, line));
}

/** The logo, by its path here; gone again if it cannot load (replaced since the session was read). */
function logoImage(url: string): HTMLImageElement | null {
  let path: string;
  try {
    path = new URL(url, location.href).pathname;
  } catch {
    return null;
  }
  if (!/^\/capture\/logos\/[a-z0-9_]+\.png$/.test(path)) return null;
  // The line beside it names the account; where there is none the logo is its only name, and the
  // page has no words for it, so it is left out of the accessibility tree rather than read as a file name.
  const img = h("img", { class: "logo", src: path, alt: "", decoding: "async" });
  img.addEventListener("error", () => img.remove());
  return img;
}

/** After the photos are sent (or the link has ended), the request is answered: the header keeps only the logo. */
export function endBranding(): void {
  document.querySelector("header.brand .asks")?.remove();
}
