import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_MODELS } from "../../core/runtime/config.ts";
import { DashboardClient } from "../helpers/dashboard-client.ts";
import { readPdf } from "../helpers/pdf-text.ts";
import { carPhotos, DATASETS } from "../helpers/photos.ts";
import { startService, type TestService, withModels } from "../helpers/service.ts";
import { create, walkaround } from "../helpers/walkaround.ts";

/**
 * The condition report in the customer's language and the account's branding (issue 33, items 2
 * and 3), over HTTP: the PDF of the API (in the inspection's capture.locale) read back with PDF.js,
 * and the shared link's page (/r/<token>: the reader's ?lang=, then capture.locale, then the
 * browser's Accept-Language), each with the account's name, logo and accent colour, or the
 * product's own look where the account has set none.
 */

// A photo (car-damage/valid, never trained on) on which the shipped model finds a glass shatter.
const SHATTERED = "000314_jpg.rf.6514763b42e3ef194ced547bc7176592.jpg";
const ACCENT = "#7c2d12";
/** A name with Polish letters: the PDF's font must print them in the header and every footer. */
const NAME = "Żółć Ubezpieczenia";

const fill = carPhotos(9);
/** The PDFs read here, kept for a person to look at. */
const ARTIFACTS = join(import.meta.dirname, "../../test-artifacts/report-languages");

describe.skipIf(!existsSync(DEFAULT_MODELS.damage))("the report in the customer's language, in the account's branding", () => {
  let svc: TestService;
  let staff: DashboardClient;
  let polish: string;
  let german: string;
  let acme: string;
  let globex: string;
  let polishLink: string;
  let germanLink: string;

  /** A completed inspection of the damaged front, its capture in `locale`. */
  const inspect = async (key: string, locale: string) => {
    const shattered = await sharp(readFileSync(join(DATASETS, "car-damage/valid/images", SHATTERED)))
      .resize(1600)
      .jpeg({ quality: 90 })
      .toBuffer();
    const made = await create(svc, key, { capture: { locale } });
    const done = await walkaround(svc, key, made, { photos: (angle, i) => (angle === "front" ? shattered : fill[i]!) });
    expect(done.status).toBe("completed");
    return made.id;
  };

  /** A link to the report, as the dashboard's Share form makes one. */
  const share = async (client: DashboardClient, id: string) => {
    const page = `/dashboard/test/inspections/${id}`;
    const res = await client.post(`${page}/share`, { days: "7" }, page);
    expect(res.status).toBe(200);
    return /<code id="share-link" class="secret">([^<]+)<\/code>/.exec(await res.text())![1]!;
  };

  beforeAll(async () => {
    svc = await startService(withModels);
    staff = await DashboardClient.signedIn(svc, "lang@acme.test", "acme");
    const globexStaff = await DashboardClient.signedIn(svc, "lang@globex.test", "globex");
    [acme, globex] = await Promise.all([svc.key("test", "acme"), svc.key("test", "globex")]);
    // Acme's branding, set on its Settings page; Globex sets none.
    const logo = await sharp({ create: { width: 800, height: 200, channels: 3, background: ACCENT } })
      .png()
      .toBuffer();
    const form = new FormData();
    form.set("display_name", NAME);
    form.set("accent_color", ACCENT);
    form.set("logo", new File([new Uint8Array(logo)], "logo.png", { type: "image/png" }));
    const saved = await staff.postMultipart("/dashboard/test/settings/branding", form, "/dashboard/test/settings");
    expect(saved.status).toBe(303);
    [polish, german] = await Promise.all([inspect(acme, "pl"), inspect(globex, "de-AT")]);
    [polishLink, germanLink] = await Promise.all([share(staff, polish), share(globexStaff, german)]);
  }, 240_000);
  afterAll(() => svc?.close());

  const pdfOf = async (res: Response, name: string) => {
    expect([res.status, res.headers.get("content-type")]).toEqual([200, "application/pdf"]);
    const bytes = Buffer.from(await res.arrayBuffer());
    mkdirSync(ARTIFACTS, { recursive: true });
    writeFileSync(join(ARTIFACTS, `${name}.pdf`), bytes);
    return readPdf(bytes);
  };

  it("prints the PDF in Polish, every diacritic, in the account's name, logo and accent colour", async () => {
    const report = await (await svc.api(acme, `/v1/inspections/${polish}/report`)).json();
    expect(report.findings.map((f: { type: string }) => f.type)).toContain("glass_shatter");
    const pdf = await pdfOf(await svc.api(acme, `/v1/inspections/${polish}/report.pdf`), "pl-branded");
    const text = pdf.text.join("\n");
    for (const heading of [
      "Raport stanu pojazdu",
      "Pojazd",
      "Sprawdzenie VIN",
      "Wynik",
      "Ustalenia",
      "Zdjęcia uszkodzeń",
      "Wykonane zdjęcia (9)",
    ])
      expect(text, heading).toContain(`\n${heading}\n`);
    expect(text).toContain("TRYB TESTOWY");
    expect(text).toContain("Testowy (utworzone kluczem testowym: to nie są prawdziwe oględziny)");
    expect(text).toContain("Tak: odczytany VIN zgadza się z VIN w aktach");
    expect(text).toContain("rozbita szyba");
    expect(text).toMatch(/Ustalenie 1: rozbita szyba(?:: [^\n]+)?, (drobne|średnie|poważne), pewność \d+%/);
    expect(text).toContain("Jakość: w porządku");
    // Dates as Polish writes them, in UTC.
    const completed = new Date(report.completed_at ?? report.created_at);
    const month = new Intl.DateTimeFormat("pl", { month: "long", day: "numeric", timeZone: "UTC" }).format(completed);
    expect(text).toContain(month);
    for (const [i, page] of pdf.text.entries()) {
      expect(page).toContain(`Strona ${i + 1} z ${pdf.pages}`);
      expect(page).toContain(`${NAME} · Raport stanu pojazdu ${polish}`);
    }
    expect(pdf.title).toBe(`Raport stanu pojazdu ${polish}`);
    expect(pdf.author).toBe(NAME);
    // The logo, as the service stored it (fitted in 480×120), besides the evidence and the 9 photos.
    expect(pdf.images).toContainEqual({ width: 480, height: 120 });
    expect(pdf.images.length).toBe(report.findings.length + report.photos.length + 1);
    // Headings and their rules in the accent colour.
    expect(pdf.colours).toContain(ACCENT);
  }, 60_000);

  it("prints the PDF in German (capture.locale de-AT), in the product's own look where the account set no branding", async () => {
    const pdf = await pdfOf(await svc.api(globex, `/v1/inspections/${german}/report.pdf`), "de");
    const text = pdf.text.join("\n");
    for (const heading of ["Zustandsbericht", "Fahrzeug", "FIN-Prüfung", "Ergebnis", "Befunde", "Belegfotos", "Aufgenommene Fotos (9)"])
      expect(text, heading).toContain(`\n${heading}\n`);
    expect(text).toContain("Ja: Die abgelesene FIN ist die hinterlegte FIN");
    expect(text).toContain("Glasbruch");
    expect(text).toMatch(/Befund 1: Glasbruch(?: an [^\n]+)?, (leicht|mittel|schwer), Sicherheit \d+\s%/);
    for (const [i, page] of pdf.text.entries()) {
      expect(page).toContain(`Seite ${i + 1} von ${pdf.pages}`);
      expect(page).toContain(`Fahrzeugbegutachtung · Zustandsbericht ${german}`);
    }
    expect(pdf.images).not.toContainEqual({ width: 480, height: 120 });
    expect(pdf.colours).not.toContain(ACCENT);
    // The product's ink for its headings.
    expect(pdf.colours).toContain("#111827");
  }, 60_000);

  it("shows the shared report in the inspection's language, with the account's name, logo and colour", async () => {
    // A browser asking for German: the integrator chose Polish for this customer, and that wins.
    const res = await fetch(polishLink, { headers: { "accept-language": "de-DE,de;q=0.9" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("vary")).toContain("accept-language");
    const html = await res.text();
    expect(html).toContain('<html lang="pl">');
    expect(html).toContain("<h1>Raport stanu pojazdu</h1>");
    expect(html).toContain(`<title>Raport stanu pojazdu · ${NAME}</title>`);
    expect(html).toContain('<h2 id="findings-title">Ustalenia</h2>');
    expect(html).toContain("<td>rozbita szyba</td>");
    expect(html).toContain('<th scope="col">Pewność</th>');
    expect(html).toContain(`href="/r/${polishLink.split("/r/")[1]}/report.pdf?lang=pl"`);
    expect(html).toMatch(/>Pobierz PDF<\/a>/);
    expect(html).toContain("Kopia tylko do odczytu, udostępniona przez link do ");
    expect(html).toContain(`<span>Wysłane przez: ${NAME}</span>`);
    // The language links, each language in its own name, the page's own marked.
    expect(html).toContain('<a href="?lang=pl" lang="pl" hreflang="pl" aria-current="page">polski</a>');
    expect(html).toContain('<a href="?lang=de" lang="de" hreflang="de">Deutsch</a>');
    // The logo, served from the capture page's path on this origin (img-src 'self').
    const logo =
      /<header class="shared-brand">\s*<img class="brand-logo" src="(\/capture\/logos\/logo_[a-z0-9]+\.png)" width="240" height="60" alt="([^"]*)">/.exec(
        html,
      );
    expect(logo?.[2]).toBe(NAME);
    const served = await fetch(svc.url + logo![1]);
    expect([served.status, served.headers.get("content-type")]).toEqual([200, "image/png"]);
    // The accent colour in a style element the CSP allows by its hash, and no other inline style.
    const style = `:root{--accent:${ACCENT}}`;
    expect(html).toContain(`<style>${style}</style>`);
    const hash = createHash("sha256").update(style).digest("base64");
    expect(res.headers.get("content-security-policy")).toContain(`style-src 'self' 'sha256-${hash}'`);
  });

  it("lets the reader choose another language (?lang=), and follows the browser where the inspection named none", async () => {
    const chosen = await (await fetch(`${polishLink}?lang=de`)).text();
    expect(chosen).toContain('<html lang="de">');
    expect(chosen).toContain("<h1>Zustandsbericht</h1>");
    expect(chosen).toContain("<td>Glasbruch</td>");
    expect(chosen).toContain('aria-current="page">Deutsch</a>');
    // A language without a catalogue is passed over, and so is what is no language tag: the inspection's.
    for (const query of ["?lang=ja", `?lang=${"x".repeat(200)}`, "?lang=de&lang=fr"]) {
      const res = await fetch(`${polishLink}${query}`);
      expect(res.status, query).toBe(200);
      expect(await res.text(), query).toContain('<html lang="pl">');
    }
    // The PDF of the page's language.
    const pdf = await pdfOf(await fetch(`${polishLink}/report.pdf?lang=fr`), "fr-shared");
    expect(pdf.text.join("\n")).toContain("\nRapport d’état\n");

    // Globex's inspection names de-AT: German whatever the browser says, unless the reader chooses.
    const globexPage = await (await fetch(germanLink, { headers: { "accept-language": "fr-CA,fr;q=0.9" } })).text();
    expect(globexPage).toContain('<html lang="de">');
    // No branding: no header, no style element, the CSP as the dashboard's.
    expect(globexPage).not.toContain('class="shared-brand"');
    expect(globexPage).not.toContain("<style>");
    expect(globexPage).toContain("<title>Zustandsbericht · Fahrzeugbegutachtungen</title>");
    const plain = await fetch(`${germanLink}?lang=nl`);
    expect(plain.headers.get("content-security-policy")).toContain("style-src 'self';");
    expect(await plain.text()).toContain("<h1>Schaderapport</h1>");
  });

  it("follows the browser's language for an inspection that named none, and says a link is wrong in it", async () => {
    const made = await create(svc, acme);
    const done = await walkaround(svc, acme, made);
    expect(done.status).toBe("completed");
    const link = await share(staff, made.id);
    const french = await (await fetch(link, { headers: { "accept-language": "fr-CA,fr;q=0.9,en;q=0.8" } })).text();
    expect(french).toContain('<html lang="fr">');
    expect(french).toContain("<h1>Rapport d’état</h1>");
    expect(french).toContain('<h2 id="findings-title">Constats</h2>');
    expect(await (await fetch(link)).text()).toContain('<html lang="en">');

    const missing = await fetch(`${svc.url}/r/not-a-real-link`, { headers: { "accept-language": "pl" } });
    expect(missing.status).toBe(404);
    const refused = await missing.text();
    expect(refused).toContain('<html lang="pl">');
    expect(refused).toContain("<h1>Nie znaleziono</h1>");
    expect(refused).toContain("Nie ma takiego raportu. Sprawdź, czy skopiowano cały link.");
  }, 60_000);
});
