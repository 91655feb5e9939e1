/**
 * Post-processing of an Ultralytics-format detection output, [B, 4 + C, N]: boxes as centre x,
 * centre y, width, height in letterboxed input pixels, then C class scores. Pure functions.
 */
export type Box = { x1: number; y1: number; x2: number; y2: number };
export type Candidate = Box & { score: number; cls: number };
export type Letterbox = { scale: number; padX: number; padY: number; width: number; height: number };

export function iou(a: Box, b: Box): number {
  const iw = Math.max(0, Math.min(a.x2, b.x2) - Math.max(a.x1, b.x1));
  const ih = Math.max(0, Math.min(a.y2, b.y2) - Math.max(a.y1, b.y1));
  const inter = iw * ih;
  const union = (a.x2 - a.x1) * (a.y2 - a.y1) + (b.x2 - b.x1) * (b.y2 - b.y1) - inter;
  return union > 0 ? inter / union : 0;
}

/** Greedy non-maximum suppression within each class, highest score first. */
export function nms(candidates: Candidate[], iouThreshold: number, maxDetections = 300): Candidate[] {
  const sorted = [...candidates].sort((a, b) => b.score - a.score);
  const kept: Candidate[] = [];
  for (const c of sorted) {
    if (kept.length >= maxDetections) break;
    if (!kept.some((k) => k.cls === c.cls && iou(k, c) > iouThreshold)) kept.push(c);
  }
  return kept;
}

/**
 * Candidates of image `b` of the batch whose best class score reaches that class's threshold, in
 * input pixels. `data` is the output tensor's flat data, `n` its anchor count, `nc` its class count.
 */
export function candidates(data: Float32Array, b: number, nc: number, n: number, thresholds: ArrayLike<number>): Candidate[] {
  const base = b * (4 + nc) * n;
  const out: Candidate[] = [];
  for (let i = 0; i < n; i++) {
    let best = 0;
    let cls = -1;
    for (let c = 0; c < nc; c++) {
      const s = data[base + (4 + c) * n + i]!;
      if (s > best) {
        best = s;
        cls = c;
      }
    }
    if (cls < 0 || best < thresholds[cls]!) continue;
    const cx = data[base + i]!,
      cy = data[base + n + i]!,
      w = data[base + 2 * n + i]!,
      h = data[base + 3 * n + i]!;
    out.push({ x1: cx - w / 2, y1: cy - h / 2, x2: cx + w / 2, y2: cy + h / 2, score: best, cls });
  }
  return out;
}

/** From letterboxed input pixels back to the photo's pixels, clipped to the photo. */
export function unletterbox(box: Box, lb: Letterbox): Box {
  return clipped(unletterboxed(box, lb), lb);
}

/**
 * From letterboxed input pixels back to the photo's pixels, not clipped: views of one photo at two
 * input sizes are fused in these, and clipped after (clipping first would move a box at the edge
 * differently in each view).
 */
export function unletterboxed(box: Box, lb: Letterbox): Box {
  return {
    x1: (box.x1 - lb.padX) / lb.scale,
    y1: (box.y1 - lb.padY) / lb.scale,
    x2: (box.x2 - lb.padX) / lb.scale,
    y2: (box.y2 - lb.padY) / lb.scale,
  };
}

/** A box in the photo's pixels, clipped to the photo. */
export function clipped<B extends Box>(box: B, { width, height }: { width: number; height: number }): B {
  const clip = (v: number, max: number) => Math.min(Math.max(v, 0), max);
  return { ...box, x1: clip(box.x1, width), y1: clip(box.y1, height), x2: clip(box.x2, width), y2: clip(box.y2, height) };
}

/** The contract's bbox: [x, y, w, h] relative to the photo, each 0–1. */
export function relativeBbox(box: Box, width: number, height: number): [number, number, number, number] {
  const r = (v: number) => Math.round(v * 10_000) / 10_000;
  return [r(box.x1 / width), r(box.y1 / height), r((box.x2 - box.x1) / width), r((box.y2 - box.y1) / height)];
}

/** A box found on the mirrored input (flipped left to right), back in the input's own pixels. */
export function unmirror<B extends Box>(box: B, size: number): B {
  return { ...box, x1: size - box.x2, x2: size - box.x1 };
}

/**
 * Weighted box fusion (Solovyev et al. 2021) of one photo's detections from `views` looks at it
 * (each view already through NMS), within each class, highest score first: a box joins the first
 * fused box of its class it overlaps by more than `iouThreshold`, which becomes its members' mean
 * weighted by score. A fused box scores its members' mean score times the share of views that saw
 * it (at most 1), so damage seen in one view only scores half. A fused box keeps its first (best)
 * member's other fields (a class name). Pure.
 */
export function fuseViews<C extends Candidate>(perView: C[][], iouThreshold: number, maxDetections = 300): C[] {
  const views = perView.length;
  const clusters: { box: C; members: C[] }[] = [];
  for (const c of perView.flat().sort((a, b) => b.score - a.score)) {
    const into = clusters.find((k) => k.box.cls === c.cls && iou(k.box, c) > iouThreshold);
    if (!into) {
      clusters.push({ box: { ...c }, members: [c] });
      continue;
    }
    into.members.push(c);
    const weight = into.members.reduce((s, m) => s + m.score, 0);
    const mean = (side: keyof Box) => into.members.reduce((s, m) => s + m[side] * m.score, 0) / weight;
    into.box = { ...into.box, x1: mean("x1"), y1: mean("y1"), x2: mean("x2"), y2: mean("y2") };
  }
  return clusters
    .map(({ box, members }) => {
      const mean = members.reduce((s, m) => s + m.score, 0) / members.length;
      return { ...box, score: (mean * Math.min(members.length, views)) / views };
    })
    .sort((a, b) => b.score - a.score)
    .slice(0, maxDetections);
}
