/**
 * The live camera, rear-facing where there is one. `open` resolves to null when the camera is
 * refused or missing; the page then offers the file input, which does the same job.
 */
export class Camera {
  readonly video: HTMLVideoElement;
  #stream: MediaStream | null = null;
  #opening: Promise<boolean> | null = null;

  constructor(video: HTMLVideoElement) {
    this.video = video;
  }

  /** One request for the camera, however many steps ask while the customer answers the prompt. */
  open(): Promise<boolean> {
    this.#opening ??= this.#open();
    return this.#opening;
  }

  async #open(): Promise<boolean> {
    if (!navigator.mediaDevices?.getUserMedia) return false;
    try {
      this.#stream = await navigator.mediaDevices.getUserMedia({
        audio: false,
        video: { facingMode: { ideal: "environment" }, width: { ideal: 1920 }, height: { ideal: 1440 } },
      });
    } catch {
      return false;
    }
    this.video.srcObject = this.#stream;
    this.video.muted = true;
    this.video.playsInline = true;
    await this.video.play().catch(() => {});
    if (!this.video.videoWidth) await new Promise((r) => this.video.addEventListener("loadedmetadata", r, { once: true }));
    return true;
  }

  get size(): [number, number] {
    return [this.video.videoWidth, this.video.videoHeight];
  }

  close(): void {
    for (const track of this.#stream?.getTracks() ?? []) track.stop();
    this.#stream = null;
    this.#opening = null;
  }
}
