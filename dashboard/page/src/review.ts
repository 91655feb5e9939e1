/**
 * The review page (dashboard/views/review.eta) works as a plain form; this adds what a reviewer
 * going through many findings needs: keys (C confirm, R reject, U not decided, then on to the next
 * finding), each finding's box lit while it has the focus, boxes drawn on a photo with mouse, pen or
 * finger (Pointer Events) or placed and moved with the keyboard, and a live tally of the decisions.
 */

const form = document.querySelector<HTMLFormElement>("form#review-form");
if (form) review(form);

type Box = [number, number, number, number];
const SVG = "http://www.w3.org/2000/svg";
/** A box smaller than this share of the photo's side is a click, not a drawing. */
const MIN_SIDE = 0.01;
/** What an arrow key moves or resizes a box by, as a share of the photo's side. */
const STEP = 0.01;
/** Where a box placed with the keyboard starts: the middle of the photo. */
const PLACED: Box = [0.4, 0.4, 0.2, 0.2];

const clamp = (v: number, low = 0, high = 1) => Math.min(high, Math.max(low, v));
const round = (v: number) => Math.round(v * 10_000) / 10_000;

function review(form: HTMLFormElement) {
  for (const hidden of form.ownerDocument.querySelectorAll<HTMLElement>("[data-js-only]")) hidden.hidden = false;
  const template = document.querySelector<HTMLTemplateElement>("template#added-template")!;
  const tally = document.getElementById("review-tally")!;
  let nextAdded = Number(form.dataset.nextAdded ?? 0);
  let dirty = false;
  let submitting = false;

  const findings = () => [...form.querySelectorAll<HTMLFieldSetElement>("fieldset.finding")];
  const boxOf = (fieldset: HTMLElement) => form.querySelector<SVGGElement>(`g.box[data-for="${CSS.escape(fieldset.id)}"]`);

  /** As the server reads it (dashboard/routes/review-form.ts, stateOf): a correction of a finding not rejected is a change. */
  const stateOf = (f: HTMLFieldSetElement) => {
    const action = f.querySelector<HTMLInputElement>("input[type=radio]:checked")?.value ?? "";
    if (action === "reject") return "rejected";
    const model = { type: f.dataset.modelType, part: f.dataset.modelPart, severity: f.dataset.modelSeverity };
    const changed = (["type", "part", "severity"] as const).some((what) => {
      const now = f.querySelector<HTMLSelectElement>(`select[data-correct="${what}"]`)?.value;
      return now !== undefined && now !== model[what];
    });
    if (changed) return "changed";
    return action === "confirm" ? "confirmed" : "undecided";
  };
  const WORDS = { undecided: "Not decided", confirmed: "Confirmed", rejected: "Rejected", changed: "Changed" } as const;

  const refresh = () => {
    const counts = { confirmed: 0, rejected: 0, changed: 0, undecided: 0 };
    for (const f of findings()) {
      if (f.dataset.finding === undefined) continue;
      const state = stateOf(f);
      counts[state]++;
      f.classList.remove("undecided", "confirmed", "rejected", "changed");
      f.classList.add(state);
      f.querySelector(".state")!.textContent = WORDS[state];
      const box = boxOf(f);
      box?.classList.remove("undecided", "confirmed", "rejected", "changed");
      box?.classList.add(state);
    }
    const added = form.querySelectorAll("fieldset[data-added]").length;
    tally.textContent = [
      `${counts.confirmed} confirmed`,
      `${counts.rejected} rejected`,
      `${counts.changed} changed`,
      `${added} new`,
      `${counts.undecided} not decided`,
    ].join(" · ");
  };

  form.addEventListener("change", () => {
    dirty = true;
    refresh();
  });

  // C, R and U decide the finding that has the focus, then the focus goes on to the next one.
  form.addEventListener("keydown", (event) => {
    const target = event.target as HTMLElement;
    if (event.ctrlKey || event.metaKey || event.altKey || target.closest("select, textarea, input:not([type=radio])")) return;
    const fieldset = target.closest<HTMLFieldSetElement>("fieldset[data-finding]");
    const value = { c: "confirm", r: "reject", u: "" }[event.key.toLowerCase()];
    if (!fieldset || value === undefined) return;
    event.preventDefault();
    const radio = fieldset.querySelector<HTMLInputElement>(`input[type=radio][value="${value}"]`)!;
    radio.checked = true;
    radio.dispatchEvent(new Event("change", { bubbles: true }));
    const all = findings().filter((f) => f.dataset.finding !== undefined);
    const next = all[all.indexOf(fieldset) + 1];
    (next?.querySelector<HTMLInputElement>("input[type=radio]:checked") ?? radio).focus();
  });

  // A finding's box is lit while the finding has the focus or the pointer.
  const light = (event: Event, on: boolean) => {
    const fieldset = (event.target as HTMLElement).closest<HTMLFieldSetElement>("fieldset.finding");
    if (fieldset) boxOf(fieldset)?.classList.toggle("active", on);
  };
  form.addEventListener("focusin", (e) => light(e, true));
  form.addEventListener("focusout", (e) => light(e, false));
  form.addEventListener("pointerover", (e) => light(e, true));
  form.addEventListener("pointerout", (e) => light(e, false));

  form.addEventListener("submit", () => {
    submitting = true;
    form.querySelector<HTMLButtonElement>("button[type=submit]")!.disabled = true;
  });
  addEventListener("beforeunload", (event) => {
    if (dirty && !submitting) event.preventDefault();
  });

  /** The box's rectangle and label on the photo's SVG, whose viewBox is the photo's pixels. */
  const drawBox = (g: SVGGElement, area: HTMLElement, [x, y, w, h]: Box) => {
    const svg = area.querySelector("svg")!;
    const { width, height } = svg.viewBox.baseVal;
    const size = Number(area.dataset.labelSize);
    const rect = g.querySelector("rect") ?? g.appendChild(document.createElementNS(SVG, "rect"));
    rect.setAttribute("vector-effect", "non-scaling-stroke");
    for (const [name, v] of [
      ["x", x * width],
      ["y", y * height],
      ["width", w * width],
      ["height", h * height],
    ] as const)
      rect.setAttribute(name, String(Math.round(v * 10) / 10));
    const text = g.querySelector("text") ?? g.appendChild(document.createElementNS(SVG, "text"));
    text.setAttribute("x", String(x * width + size / 4));
    text.setAttribute("y", String(y * height + size));
    text.setAttribute("font-size", String(size));
  };

  const boxValue = (fieldset: HTMLElement): Box =>
    fieldset.querySelector<HTMLInputElement>("input[data-field=bbox]")!.value.split(",").map(Number) as Box;

  /** Numbers the new findings +1, +2 … in the page's order, in the list and on the photos. */
  const renumber = () => {
    for (const [i, fieldset] of [...form.querySelectorAll<HTMLElement>("fieldset[data-added]")].entries()) {
      fieldset.querySelector(".num")!.textContent = `+${i + 1}`;
      const label = boxOf(fieldset)?.querySelector("text");
      if (label) label.textContent = `+${i + 1}`;
    }
  };

  const setBox = (fieldset: HTMLElement, box: Box) => {
    fieldset.querySelector<HTMLInputElement>("input[data-field=bbox]")!.value = box.map(round).join(",");
    const media = fieldset.querySelector<HTMLInputElement>("input[data-field=media]")!.value;
    const area = form.querySelector<HTMLElement>(`.draw-area[data-media="${CSS.escape(media)}"]`);
    const g = boxOf(fieldset);
    if (area && g) drawBox(g, area, box);
    const [x, y, w, h] = box.map((v) => Math.round(v * 100));
    fieldset.querySelector<HTMLButtonElement>(".move-box")!.title =
      `Box at ${x}% from the left, ${y}% from the top, ${w}% × ${h}% of the photo`;
  };

  /** A new finding on the photo of `area`, with its box; the focus goes to its type. */
  const addFinding = (area: HTMLElement, box: Box) => {
    const n = String(nextAdded++);
    const fragment = template.content.cloneNode(true) as DocumentFragment;
    const fieldset = fragment.querySelector<HTMLFieldSetElement>("fieldset")!;
    for (const el of fieldset.querySelectorAll<HTMLElement>("[name]"))
      el.setAttribute("name", el.getAttribute("name")!.replace("__N__", n));
    fieldset.id = `added-${n}`;
    fieldset.dataset.added = n;
    for (const hidden of fieldset.querySelectorAll<HTMLElement>("[data-js-only]")) hidden.hidden = false;
    fieldset.querySelector<HTMLInputElement>("input[data-field=media]")!.value = area.dataset.media!;
    fieldset.querySelector<HTMLSelectElement>("select[data-field=part]")!.value = area.dataset.part ?? "";
    form.querySelector(`.added-list[data-media="${CSS.escape(area.dataset.media!)}"]`)!.append(fieldset);
    const g = document.createElementNS(SVG, "g");
    g.classList.add("box", "added");
    g.dataset.for = fieldset.id;
    area.querySelector("svg")!.append(g);
    setBox(fieldset, box);
    renumber();
    dirty = true;
    refresh();
    fieldset.querySelector<HTMLSelectElement>("select")!.focus();
    return fieldset;
  };

  form.addEventListener("click", (event) => {
    const button = (event.target as HTMLElement).closest("button");
    const remove = button?.closest("fieldset[data-added]");
    if (button?.classList.contains("remove-added") && remove) {
      boxOf(remove as HTMLElement)?.remove();
      const photo = remove.closest(".review-photo");
      remove.remove();
      renumber();
      dirty = true;
      refresh();
      photo?.querySelector<HTMLButtonElement>(".place-box")?.focus();
    }
  });

  // The arrow keys move a new finding's box while its Move box button has the focus; with Shift they resize it.
  form.addEventListener("keydown", (event) => {
    const button = (event.target as HTMLElement).closest(".move-box");
    const fieldset = button?.closest<HTMLElement>("fieldset[data-added]");
    const delta = { ArrowLeft: [-STEP, 0], ArrowRight: [STEP, 0], ArrowUp: [0, -STEP], ArrowDown: [0, STEP] }[event.key];
    if (!fieldset || !delta) return;
    event.preventDefault();
    let [x, y, w, h] = boxValue(fieldset);
    if (event.shiftKey) {
      w = clamp(w + delta[0]!, MIN_SIDE, 1 - x);
      h = clamp(h + delta[1]!, MIN_SIDE, 1 - y);
    } else {
      x = clamp(x + delta[0]!, 0, 1 - w);
      y = clamp(y + delta[1]!, 0, 1 - h);
    }
    setBox(fieldset, [x, y, w, h]);
    dirty = true;
  });

  for (const area of form.querySelectorAll<HTMLElement>(".draw-area")) drawing(area, addFinding);
  renumber();
  refresh();
}

/**
 * Drawing on one photo: a mouse or a pen draws at once; a finger only after Draw a box is pressed
 * (touch-action: none then), so that a finger on the photo otherwise scrolls the page. Place a box
 * puts one in the middle, for the keyboard.
 */
function drawing(area: HTMLElement, addFinding: (area: HTMLElement, box: Box) => HTMLElement) {
  const tools = area.nextElementSibling as HTMLElement;
  const toggle = tools.querySelector<HTMLButtonElement>(".draw-toggle")!;
  const hint = tools.querySelector<HTMLElement>(".draw-hint")!;
  const svg = area.querySelector("svg")!;
  const setDrawing = (on: boolean) => {
    toggle.setAttribute("aria-pressed", String(on));
    area.classList.toggle("drawing", on);
    hint.textContent = on ? "Drag over the damage on the photo." : "";
  };
  toggle.addEventListener("click", () => setDrawing(toggle.getAttribute("aria-pressed") !== "true"));
  tools.querySelector(".place-box")!.addEventListener("click", () => addFinding(area, PLACED));

  let start: { x: number; y: number; pointer: number } | null = null;
  let preview: SVGGElement | null = null;
  const at = (event: PointerEvent) => {
    const r = area.getBoundingClientRect();
    return { x: clamp((event.clientX - r.left) / r.width), y: clamp((event.clientY - r.top) / r.height) };
  };
  const boxFrom = (event: PointerEvent): Box => {
    const p = at(event);
    const x = Math.min(p.x, start!.x);
    const y = Math.min(p.y, start!.y);
    return [x, y, Math.abs(p.x - start!.x), Math.abs(p.y - start!.y)];
  };
  const end = () => {
    preview?.remove();
    preview = null;
    start = null;
  };

  area.addEventListener("pointerdown", (event) => {
    if (event.button !== 0 || start) return;
    if (event.pointerType === "touch" && !area.classList.contains("drawing")) return;
    event.preventDefault();
    area.setPointerCapture(event.pointerId);
    start = { ...at(event), pointer: event.pointerId };
    preview = document.createElementNS(SVG, "g");
    preview.classList.add("box", "drawing-preview");
    const rect = preview.appendChild(document.createElementNS(SVG, "rect"));
    rect.setAttribute("vector-effect", "non-scaling-stroke");
    svg.append(preview);
  });
  area.addEventListener("pointermove", (event) => {
    if (!start || event.pointerId !== start.pointer || !preview) return;
    const [x, y, w, h] = boxFrom(event);
    const { width, height } = svg.viewBox.baseVal;
    const rect = preview.querySelector("rect")!;
    rect.setAttribute("x", String(x * width));
    rect.setAttribute("y", String(y * height));
    rect.setAttribute("width", String(w * width));
    rect.setAttribute("height", String(h * height));
  });
  area.addEventListener("pointerup", (event) => {
    if (!start || event.pointerId !== start.pointer) return;
    const box = boxFrom(event);
    end();
    if (box[2] < MIN_SIDE || box[3] < MIN_SIDE) return;
    setDrawing(false);
    addFinding(area, box);
  });
  area.addEventListener("pointercancel", end);
}
