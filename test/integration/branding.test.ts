import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DashboardClient } from "../helpers/dashboard-client.ts";
import { startService, type TestService } from "../helpers/service.ts";
import { create } from "../helpers/walkaround.ts";

/**
 * Whose page it is (issue 33, item 3), over HTTP as a browser without scripts uses the dashboard:
 * the account's branding set on the settings page (a multipart form with the dashboard's CSRF
 * token), the capture session (GET /capture/v1/<token>) naming it, the logo served where the
 * capture page's CSP loads it, and what is refused refused with the reason on the page, nothing saved.
 */
type Account = { display_name: string | null; accent_color: string | null; logo_url: string | null };
const NONE: Account = { display_name: null, accent_color: null, logo_url: null };

/** A logo as a designer exports it: wide, with transparency and metadata. */
const wideLogo = () =>
  sharp({ create: { width: 1200, height: 300, channels: 4, background: { r: 29, g: 78, b: 216, alpha: 0.9 } } })
    .composite([
      { input: Buffer.from('<svg width="600" height="150"><circle cx="75" cy="75" r="60" fill="#fff"/></svg>'), top: 75, left: 300 },
    ])
    .withMetadata({ exif: { IFD0: { Copyright: "Acme Insurance" } } })
    .png()
    .toBuffer();

/** A JPEG of noise, so it does not compress: `kb` kilobytes or more. */
async function noisyJpeg(kb: number): Promise<Buffer> {
  const side = Math.ceil(Math.sqrt(kb * 1024));
  const noise = Buffer.alloc(side * side * 3);
  for (let i = 0; i < noise.length; i++) noise[i] = (i * 2654435761) >>> 24;
  return sharp(noise, { raw: { width: side, height: side, channels: 3 } })
    .jpeg({ quality: 100 })
    .toBuffer();
}

const file = (bytes: Buffer, name: string, type: string) => new File([new Uint8Array(bytes)], name, { type });

function brandingForm(fields: { display_name?: string; accent_color?: string; remove_logo?: string }, logo?: File): FormData {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.set(k, v);
  // A browser sends an empty file field when no file was chosen.
  form.set("logo", logo ?? new File([], "", { type: "application/octet-stream" }));
  return form;
}

const errorsOf = (html: string) =>
  [...(/<div class="error" role="alert">[\s\S]*?<\/div>/.exec(html)?.[0] ?? "").matchAll(/<a href="#(\w+)">([^<]*)<\/a>/g)].map((m) => [
    m[1],
    m[2],
  ]);

describe("branding the capture page from the dashboard", () => {
  let svc: TestService;
  let staff: DashboardClient;
  let stranger: DashboardClient;
  let token: string;
  let strangersToken: string;
  const session = async (t = token) => {
    const res = await fetch(`${svc.url}/capture/v1/${t}`);
    expect(res.status).toBe(200);
    return ((await res.json()) as { account: Account }).account;
  };
  const settings = "/dashboard/test/settings";
  const save = (form: FormData, client = staff) => client.postMultipart("/dashboard/test/settings/branding", form, settings);

  beforeAll(async () => {
    svc = await startService();
    [staff, stranger] = await Promise.all([
      DashboardClient.signedIn(svc, "brand@acme.test", "acme"),
      DashboardClient.signedIn(svc, "brand@globex.test", "globex"),
    ]);
    token = (await create(svc, await svc.key("live", "acme"))).token;
    strangersToken = (await create(svc, await svc.key("test", "globex"))).token;
  }, 120_000);
  afterAll(() => svc?.close());

  it("shows no branding until the account sets one, and the settings form in the navigation", async () => {
    expect(await session()).toEqual(NONE);
    const res = await staff.get(settings);
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('<a href="/dashboard/test/settings" aria-current="page">Settings</a>');
    expect(html).toContain('enctype="multipart/form-data"');
    expect(html).toMatch(/<label for="display_name">Display name[\s\S]*?<input id="display_name" name="display_name"/);
    expect(html).toContain('aria-describedby="accent_color-help"');
    expect(html).not.toContain("The current logo");
  });

  it("saves the display name, colour and logo; the capture session of the account's inspections names them", async () => {
    const logo = await wideLogo();
    const res = await save(
      brandingForm({ display_name: "  Acme   Insurance ", accent_color: "#1D4ED8" }, file(logo, "acme.png", "image/png")),
    );
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/dashboard/test/settings?saved=1");
    const page = await (await staff.get(`${settings}?saved=1`)).text();
    expect(page).toContain("Saved. Capture pages opened from now on show it.");
    expect(page).toContain('value="Acme Insurance"');
    expect(page).toContain('value="#1d4ed8"');
    // A live inspection: the branding is the account's, in test and live alike.
    const account = await session();
    expect(account.display_name).toBe("Acme Insurance");
    expect(account.accent_color).toBe("#1d4ed8");
    expect(account.logo_url).toMatch(new RegExp(`^${svc.url}/capture/logos/logo_[a-z0-9]{24}\\.png$`));
    expect(page).toContain(`<img src="${new URL(account.logo_url!).pathname}" alt="The current logo" width="160" height="40">`);
    // Another account's capture page is not branded by it.
    expect(await session(strangersToken)).toEqual(NONE);

    // The logo: re-encoded as a small PNG fitted in 480 × 120, no metadata, cached for good, on the page's origin.
    const served = await fetch(account.logo_url!);
    expect(served.status).toBe(200);
    expect(served.headers.get("content-type")).toBe("image/png");
    expect(served.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(served.headers.get("x-content-type-options")).toBe("nosniff");
    const png = Buffer.from(await served.arrayBuffer());
    const meta = await sharp(png).metadata();
    expect([meta.format, meta.width, meta.height, meta.exif]).toEqual(["png", 480, 120, undefined]);
    expect(png.length).toBeLessThan(logo.length);
    expect((await fetch(`${svc.url}/capture/logos/logo_${"a".repeat(24)}.png`)).status).toBe(404);
    expect((await fetch(`${svc.url}/capture/logos/..%2Fphotos.png`)).status).toBe(404);
  });

  it("refuses a colour white text does not read on, naming its contrast and a shade that passes; nothing is saved", async () => {
    const res = await save(brandingForm({ display_name: "Acme Yellow", accent_color: "#ffcc00" }));
    expect(res.status).toBe(400);
    const html = await res.text();
    const errors = errorsOf(html);
    expect(errors).toHaveLength(1);
    expect(errors[0]![0]).toBe("accent_color");
    expect(errors[0]![1]).toMatch(
      /^White text on #ffcc00 has a contrast of 1\.\d\d:1, under the 4\.5:1 that buttons need to stay readable \(WCAG AA\)\. A darker shade of it that passes: #[0-9a-f]{6}\.$/,
    );
    // What was typed is kept, the field marked and described by its error.
    expect(html).toContain('value="Acme Yellow"');
    expect(html).toMatch(
      /id="accent_color"[^>]*value="#ffcc00" aria-describedby="accent_color-help accent_color-error" aria-invalid="true"/,
    );
    expect(html).toContain('<p class="error" id="accent_color-error">White text on #ffcc00');
    expect((await session()).display_name).toBe("Acme Insurance");
    expect((await session()).accent_color).toBe("#1d4ed8");
    // Not a colour at all.
    expect(errorsOf(await (await save(brandingForm({ display_name: "Acme", accent_color: "blue" }))).text())).toEqual([
      ["accent_color", "Write the accent colour as # and six hexadecimal digits, such as #1d4ed8."],
    ]);
  });

  it("refuses a logo over 200 KB, or one that is no PNG, JPEG or WebP, saying so; and a display name over 60 characters", async () => {
    const big = await noisyJpeg(260);
    const kb = Math.ceil(big.length / 1024);
    const res = await save(brandingForm({ display_name: "Acme", accent_color: "#1d4ed8" }, file(big, "huge.jpg", "image/jpeg")));
    expect(res.status).toBe(400);
    expect(errorsOf(await res.text())).toEqual([
      ["logo", `The logo is ${kb} KB; it may be at most 200 KB. Save it smaller and try again.`],
    ]);
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
    const notImage = await save(brandingForm({ display_name: "Acme" }, file(svg, "logo.png", "image/png")));
    expect(notImage.status).toBe(400);
    expect(errorsOf(await notImage.text())).toEqual([["logo", "The logo must be a PNG, JPEG or WebP image."]]);
    const broken = await save(brandingForm({ display_name: "Acme" }, file((await wideLogo()).subarray(0, 400), "cut.png", "image/png")));
    expect(errorsOf(await broken.text())).toEqual([
      ["logo", "The logo could not be read as a PNG image; it may be damaged. Export it again and try again."],
    ]);
    const long = await save(brandingForm({ display_name: "A".repeat(61) }));
    expect(errorsOf(await long.text())).toEqual([["display_name", "The display name may be at most 60 characters; this one has 61."]]);
    // Beyond what the form reads at all: the dashboard's error page says why.
    const huge = await save(brandingForm({ display_name: "Acme" }, file(Buffer.alloc(5 * 1024 * 1024), "huge.png", "image/png")));
    expect(huge.status).toBe(413);
    expect(await huge.text()).toContain("What was sent is too large: a logo may be at most 200 KB.");
    expect((await session()).logo_url).not.toBeNull();
    expect((await session()).display_name).toBe("Acme Insurance");
  });

  it("needs the form's CSRF token and a signed-in user of the account", async () => {
    const form = brandingForm({ display_name: "Evil Corp" });
    form.set("_csrf", "forged");
    expect((await save(form)).status).toBe(403);
    const signedOut = await fetch(`${svc.url}/dashboard/test/settings/branding`, {
      method: "POST",
      body: brandingForm({ display_name: "x" }),
      redirect: "manual",
    });
    expect(signedOut.status).toBe(303);
    expect(signedOut.headers.get("location")).toBe("/dashboard/sign-in");
    // Another account's user sets their own account's branding, never acme's.
    expect((await save(brandingForm({ display_name: "Globex" }), stranger)).status).toBe(303);
    expect((await session()).display_name).toBe("Acme Insurance");
    expect((await session(strangersToken)).display_name).toBe("Globex");
  });

  it("replaces and removes the logo (the old one's URL then answers 404), and shows a name as text", async () => {
    const first = (await session()).logo_url!;
    expect((await save(brandingForm({ display_name: "<b>Acme</b> & Co" }, file(await wideLogo(), "new.png", "image/png")))).status).toBe(
      303,
    );
    const replaced = await session();
    expect(replaced.logo_url).not.toBe(first);
    expect((await fetch(first)).status).toBe(404);
    expect((await fetch(replaced.logo_url!)).status).toBe(200);
    // Left empty, the colour is gone: the form replaces the branding whole.
    expect(replaced).toMatchObject({ display_name: "<b>Acme</b> & Co", accent_color: null });
    expect(await (await staff.get(settings)).text()).toContain('value="&lt;b&gt;Acme&lt;/b&gt; &amp; Co"');
    expect((await save(brandingForm({ display_name: "", remove_logo: "1" }))).status).toBe(303);
    expect(await session()).toEqual(NONE);
    expect((await fetch(replaced.logo_url!)).status).toBe(404);
  });
});
