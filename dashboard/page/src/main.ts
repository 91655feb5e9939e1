/**
 * The dashboard works without this script (every action is a form); it adds what plain HTML cannot:
 * copy buttons, confirmations before destructive forms, zooming into a photo.
 */
for (const button of document.querySelectorAll<HTMLButtonElement>("button[data-copy]")) {
  button.addEventListener("click", async () => {
    const text = document.getElementById(button.dataset.copy!)?.textContent ?? "";
    try {
      await navigator.clipboard.writeText(text.trim());
      button.textContent = "Copied";
    } catch {
      // Without clipboard permission the text is selected instead, for Ctrl+C.
      const range = document.createRange();
      range.selectNodeContents(document.getElementById(button.dataset.copy!)!);
      getSelection()?.removeAllRanges();
      getSelection()?.addRange(range);
      button.textContent = "Press Ctrl+C";
    }
    setTimeout(() => {
      button.textContent = "Copy";
    }, 2000);
  });
}

for (const form of document.querySelectorAll<HTMLFormElement>("form[data-confirm]")) {
  form.addEventListener("submit", (event) => {
    if (!confirm(form.dataset.confirm!)) event.preventDefault();
  });
}

// A table wider than the screen (a phone's) scrolls sideways in its frame; that frame is then a
// named stop in the tab order, so the table scrolls with the arrow keys too (WCAG 2.1.1).
const frames = document.querySelectorAll<HTMLElement>(".table-wrap");
const markScrollable = () => {
  for (const frame of frames) {
    if (frame.scrollWidth > frame.clientWidth) {
      frame.tabIndex = 0;
      frame.setAttribute("role", "region");
      frame.setAttribute("aria-label", frame.querySelector("caption")?.textContent?.trim() || "Table");
    } else {
      frame.removeAttribute("tabindex");
      frame.removeAttribute("role");
      frame.removeAttribute("aria-label");
    }
  }
};
markScrollable();
addEventListener("resize", markScrollable);

// A photo opens full size in a dialog; a click on the photo toggles between fitted and actual size.
const dialog = document.querySelector<HTMLDialogElement>("dialog#zoom");
if (dialog) {
  const image = dialog.querySelector("img")!;
  for (const link of document.querySelectorAll<HTMLAnchorElement>("a[data-zoom]")) {
    link.addEventListener("click", (event) => {
      event.preventDefault();
      image.src = link.href;
      image.alt = link.querySelector("img")?.alt ?? "";
      dialog.classList.remove("actual");
      dialog.showModal();
    });
  }
  image.addEventListener("click", () => dialog.classList.toggle("actual"));
  dialog.addEventListener("click", (event) => {
    if (event.target === dialog) dialog.close();
  });
}
