"""Trains the whole-photo damage judgement (model.py: PhotoJudge) and exports it to ONNX.

Damaged: car-damage-severity's photos outside the held-out fifth (whole cars and close-ups, with
their severities and "broken" boxes) and a sample of car-damage's close-ups. Clean: the car-parts
training photos, whole and as crops (a clean close-up must not read as damage). Validation: one more
fifth of car-damage-severity (--val-fold) and a fifth of the car-parts training photos, from which
the thresholds are chosen; eval-product measures the held-out fifth and the car-parts test photos.

The damaged photos come from one source (640 px squares, stretched, re-encoded) and the clean ones
from another; a model can learn the source instead of the damage. So every training photo, clean or
damaged, is put into a random format first (random size and aspect, JPEG at a random quality), and
validation is also measured with each side put into the other's format (--report shows both).

    python train_judge.py --datasets ../shared/datasets --out runs/judge --epochs 30 --batch 32 --frozen 0 --close-ups 900   # the shipped model, on a GPU
"""
import argparse
import importlib.util
import inspect
import io
import json
import math
import os
import random
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image, ImageEnhance

sys.path.insert(0, os.path.dirname(__file__))
from data import FOLDS, HELD_OUT_FOLD, _image_files, _letterbox, fold_of  # noqa: E402
from model import LiteBackbone, PhotoJudge  # noqa: E402

SEVERITIES = ("minor", "moderate", "severe")


class Sample:
    """A photo in memory with what is known of it: `damage` 0/1, `broken` and `severity` (index in
    SEVERITIES) or None when the source does not say, and boxes as (x1, y1, x2, y2, broken) in pixels."""

    def __init__(self, img, damage, broken, severity, boxes, name):
        self.img, self.damage, self.broken, self.severity, self.boxes, self.name = img, damage, broken, severity, boxes, name


def _open(path, max_side):
    img = Image.open(path).convert("RGB")
    if max(img.size) > max_side:
        r = max_side / max(img.size)
        img = img.resize((round(img.width * r), round(img.height * r)), Image.BILINEAR)
        return img, r
    img.load()
    return img, 1.0


def severity_photos(root, folds, max_side):
    d = json.load(open(os.path.join(root, "annotations.json")))
    cats = {c["id"]: c["name"] for c in d["categories"]}
    by_image = {}
    for a in d["annotations"]:
        by_image.setdefault(a["image_id"], []).append(a)
    out = []
    for im in sorted(d["images"], key=lambda i: i["file_name"]):
        if fold_of(im["file_name"]) not in folds:
            continue
        boxes, worst = [], -1
        for a in by_image.get(im["id"], []):
            parts = cats[a["category_id"]].split("-")
            if len(parts) != 2:
                continue
            x, y, w, h = a["bbox"]
            boxes.append((x, y, x + w, y + h, parts[1] == "broken"))
            worst = max(worst, SEVERITIES.index(parts[0]))
        if not boxes:
            continue  # 7 photos carry only the super-category: their damage is not said
        img, r = _open(os.path.join(root, "images", im["file_name"]), max_side)
        boxes = [(x1 * r, y1 * r, x2 * r, y2 * r, b) for x1, y1, x2, y2, b in boxes]
        out.append(Sample(img, 1, int(any(b[4] for b in boxes)), worst, boxes, im["file_name"]))
    return out


def close_ups(root, split, count, max_side, seed=0):
    """car-damage's close-ups (CarDD classes, no severity, no "broken" label)."""
    folder = os.path.join(root, split, "images")
    files = _image_files(folder)
    random.Random(seed).shuffle(files)
    out = []
    for f in files[:count]:
        img, _ = _open(os.path.join(folder, f), max_side)
        boxes = []
        label = os.path.join(root, split, "labels", os.path.splitext(f)[0] + ".txt")
        for line in open(label) if os.path.exists(label) else []:
            v = [float(t) for t in line.split()[1:]]
            xs, ys = v[0::2], v[1::2]
            if len(v) == 4:
                xs, ys = [v[0] - v[2] / 2, v[0] + v[2] / 2], [v[1] - v[3] / 2, v[1] + v[3] / 2]
            boxes.append((min(xs) * img.width, min(ys) * img.height, max(xs) * img.width, max(ys) * img.height, False))
        if boxes:
            out.append(Sample(img, 1, None, None, boxes, f))
    return out


def clean_cars(folder, keep, max_side):
    """The car-parts photos (no damage); `keep(i)` picks by index in the sorted listing."""
    files = _image_files(folder)
    return [Sample(_open(os.path.join(folder, f), max_side)[0], 0, 0, None, [], f) for i, f in enumerate(files) if keep(i)]


# --- Formats and augmentation -----------------------------------------------------------------


def reencode(img, rng, size=None, quality=None):
    """The photo in another format: resized (to `size`, or a random size and aspect) and JPEG
    re-encoded (at `quality`, or a random one)."""
    if size is None:
        w = rng.randint(320, 1024)
        aspect = (img.height / img.width) * math.exp(rng.uniform(-0.3, 0.3))
        size = (w, max(64, round(w * aspect)))
    sx, sy = size[0] / img.width, size[1] / img.height
    img = img.resize(size, Image.BILINEAR)
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=quality or rng.randint(35, 95))
    buf.seek(0)
    return Image.open(buf).convert("RGB"), (sx, sy)


def as_damaged_source(img):
    """The damaged set's format: stretched to a 640 px square, JPEG re-encoded."""
    return reencode(img, None, (640, 640), 80)


def as_clean_source(img):
    """The clean set's format: 512 px on the long side, aspect kept, JPEG re-encoded."""
    r = 512 / max(img.size)
    return reencode(img, None, (round(img.width * r), round(img.height * r)), 90)


def crop(sample, rng):
    """A close-up cut from the photo: for a clean photo anywhere, for a damaged one around one of
    its boxes. Returns the crop and the boxes kept (clipped, dropped when under half is left)."""
    img = sample.img
    W, H = img.size
    frac = rng.uniform(0.3, 0.7)
    cw, ch = W * frac, H * frac
    if sample.boxes:
        x1, y1, x2, y2, _ = rng.choice(sample.boxes)
        cw, ch = max(cw, x2 - x1), max(ch, y2 - y1)
        cx = rng.uniform(max(0, x2 - cw), min(x1, W - cw)) if min(x1, W - cw) > max(0, x2 - cw) else max(0, min(x1, W - cw))
        cy = rng.uniform(max(0, y2 - ch), min(y1, H - ch)) if min(y1, H - ch) > max(0, y2 - ch) else max(0, min(y1, H - ch))
    else:
        cx, cy = rng.uniform(0, W - cw), rng.uniform(0, H - ch)
    kept = []
    for x1, y1, x2, y2, b in sample.boxes:
        nx1, ny1, nx2, ny2 = max(x1, cx), max(y1, cy), min(x2, cx + cw), min(y2, cy + ch)
        if nx2 > nx1 and ny2 > ny1 and (nx2 - nx1) * (ny2 - ny1) >= 0.5 * (x2 - x1) * (y2 - y1):
            kept.append((nx1 - cx, ny1 - cy, nx2 - cx, ny2 - cy, b))
    return img.crop((round(cx), round(cy), round(cx + cw), round(cy + ch))), kept


def cell_targets(boxes, to_square, grid, known_broken):
    """Per stride-32 cell: damage (1 inside a labelled box, 0 elsewhere) and broken (-1 where the
    source does not say). `to_square` takes a box in the photo's pixels to normalised xyxy of the
    letterboxed square (data.py's _letterbox). A box smaller than a cell marks the cell holding it."""
    t = torch.zeros(2, grid, grid)
    if not known_broken:
        t[1] = -1
    for x1, y1, x2, y2, broken in boxes:
        bx1, by1, bx2, by2 = to_square(x1, y1, x2, y2)
        c1, r1 = int(bx1 * grid), int(by1 * grid)
        c2, r2 = min(int(bx2 * grid), grid - 1), min(int(by2 * grid), grid - 1)
        t[0, r1 : r2 + 1, c1 : c2 + 1] = 1
        if broken:
            t[1, r1 : r2 + 1, c1 : c2 + 1] = 1
    return t


class JudgeSet(torch.utils.data.Dataset):
    def __init__(self, samples, size, train, transform=None, seed=0, colour=0.3):
        self.samples, self.size, self.train, self.transform, self.seed, self.colour = samples, size, train, transform, seed, colour
        self.epoch = 0

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        s = self.samples[i]
        rng = random.Random(self.seed * 1_000_003 + self.epoch * 10_007 + i)
        img, boxes = s.img, s.boxes
        if self.train:
            if rng.random() < 0.35:
                img, boxes = crop(s, rng)
                if s.damage and not boxes:
                    img, boxes = s.img, s.boxes
            if rng.random() < 0.8:
                img, (sx, sy) = reencode(img, rng)
                boxes = [(x1 * sx, y1 * sy, x2 * sx, y2 * sy, b) for x1, y1, x2, y2, b in boxes]
            if rng.random() < 0.5:
                img = img.transpose(Image.FLIP_LEFT_RIGHT)
                boxes = [(img.width - x2, y1, img.width - x1, y2, b) for x1, y1, x2, y2, b in boxes]
            c = self.colour
            img = ImageEnhance.Brightness(img).enhance(rng.uniform(1 - c, 1 + c))
            img = ImageEnhance.Contrast(img).enhance(rng.uniform(1 - c, 1 + c))
            img = ImageEnhance.Color(img).enhance(rng.uniform(1 - 4 * c / 3, 1 + 4 * c / 3))
            # Faded, dusty or grey paint is not damage: strong colour jitter also greys some photos.
            if c >= 0.5 and rng.random() < 0.1:
                img = img.convert("L").convert("RGB")
        elif self.transform:
            img, (sx, sy) = self.transform(img)
            boxes = [(x1 * sx, y1 * sy, x2 * sx, y2 * sy, b) for x1, y1, x2, y2, b in boxes]
        t, to_square = _letterbox(img, self.size)
        cells = cell_targets(boxes, to_square, self.size // 32, s.broken is not None)
        broken = -1 if s.broken is None else s.broken
        severity = -1 if s.severity is None else s.severity
        return t, torch.tensor([s.damage, broken, severity], dtype=torch.float32), cells


def loss_of(photo, cells, y, cell_y):
    damage = F.binary_cross_entropy_with_logits(photo[:, 0], y[:, 0])
    known = y[:, 1] >= 0
    broken = F.binary_cross_entropy_with_logits(photo[known, 1], y[known, 1]) if known.any() else photo.sum() * 0
    rated = y[:, 2] >= 0
    severity = F.cross_entropy(photo[rated, 2:], y[rated, 2].long()) if rated.any() else photo.sum() * 0
    mask = cell_y >= 0
    # Damage covers a few cells of many: positives weighed up so the map does not settle on "none".
    weight = torch.where(cell_y > 0, 4.0, 1.0)[mask]
    cell = F.binary_cross_entropy_with_logits(cells[mask], cell_y[mask], weight=weight)
    return damage + 0.5 * broken + 0.5 * severity + cell


@torch.no_grad()
def scores_of(net, samples, size, transform=None, batch=32):
    net.eval()
    loader = torch.utils.data.DataLoader(JudgeSet(samples, size, False, transform), batch_size=batch)
    out, device = [], next(net.parameters()).device
    for x, _, _ in loader:
        photo, _ = net(x.to(device).float() / 255)
        out.append(torch.cat([torch.sigmoid(photo[:, :2]), torch.softmax(photo[:, 2:], 1)], 1).cpu())
    return torch.cat(out).numpy()


def auc(pos, neg):
    pos, neg = np.asarray(pos), np.asarray(neg)
    if not len(pos) or not len(neg):
        return float("nan")
    return float(((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean()))


def report(net, val_damaged, val_clean, size):
    """Validation as the product meets it: the share of clean photos over each threshold, and the
    share of damaged ones by worst severity; with each side in its own format and in the other's."""
    rows = {}
    for fmt, dmg_t, cln_t in (("own format", None, None), ("swapped formats", as_clean_source, as_damaged_source)):
        d = scores_of(net, val_damaged, size, dmg_t)
        c = scores_of(net, val_clean, size, cln_t)
        rows[fmt] = (d, c)
        sev = np.array([s.severity for s in val_damaged])
        line = f"  {fmt}: damage AUC {auc(d[:, 0], c[:, 0]):.3f}"
        for thr in (0.3, 0.5, 0.7, 0.8, 0.9, 0.95):
            line += f" | >{thr}: clean {np.mean(c[:, 0] > thr):.1%} minor {np.mean(d[sev == 0, 0] > thr):.0%} mod+ {np.mean(d[sev >= 1, 0] > thr):.0%}"
        print(line, flush=True)
        b = np.array([s.broken for s in val_damaged])
        print(f"    broken AUC (damaged photos with a broken box against clean and other damaged): {auc(d[b == 1, 1], np.concatenate([d[b == 0, 1], c[:, 1]])):.3f}; severity agreement {np.mean(d[:, 2:].argmax(1) == sev):.2f}", flush=True)
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", required=True, help="the shared datasets folder (car-damage, car-damage-severity, car-parts)")
    p.add_argument("--out", required=True)
    p.add_argument("--size", type=int, default=512, help="the input size (the shipped model's 512; 320 halves a CPU epoch's time)")
    p.add_argument("--epochs", type=int, default=8, help="0 with --init: validate and export that checkpoint (at --size)")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--close-ups", type=int, default=700, help="how many of car-damage's training close-ups to sample")
    p.add_argument("--clean-repeat", type=int, default=3, help="how many times each clean photo appears in an epoch")
    p.add_argument("--severity-repeat", type=int, default=2)
    p.add_argument("--val-fold", type=int, default=4, help="the fifth of car-damage-severity validated on (0 is held out for eval-product)")
    p.add_argument("--frozen", type=int, default=LiteBackbone.FROZEN, help="backbone blocks kept at their ImageNet weights (the shipped model: 0, on a GPU)")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--colour", type=float, default=0.3, help="brightness and contrast moved by up to this share, saturation by a third more; from 0.5 one photo in ten is also greyed")
    p.add_argument("--max-side", type=int, default=640)
    p.add_argument("--init", help="a checkpoint (last.pt) to start from")
    args = p.parse_args()
    # The export at the end needs onnx; said now rather than after an hour of training.
    if importlib.util.find_spec("onnx") is None:
        sys.exit("train_judge.py: the onnx package is missing (Debian: apt-get install python3-onnx)")
    torch.manual_seed(args.seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    # torch counts physical cores for its default, one on these 2-vCPU machines; train.py does the same.
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    ds = args.datasets
    if args.val_fold == HELD_OUT_FOLD or not 0 <= args.val_fold < FOLDS:
        p.error(f"--val-fold must be a fold other than the held-out {HELD_OUT_FOLD}, from 0 to {FOLDS - 1}")
    train_folds = {f for f in range(FOLDS) if f not in (HELD_OUT_FOLD, args.val_fold)}
    severity = severity_photos(os.path.join(ds, "car-damage-severity"), train_folds, args.max_side)
    val_damaged = severity_photos(os.path.join(ds, "car-damage-severity"), {args.val_fold}, args.max_side)
    shots = close_ups(os.path.join(ds, "car-damage"), "train", args.close_ups, args.max_side, args.seed)
    parts = os.path.join(ds, "car-parts", "trainingset", "JPEGImages")
    clean = clean_cars(parts, lambda i: i % 5 != 0, args.max_side)
    val_clean = clean_cars(parts, lambda i: i % 5 == 0, args.max_side)
    train = severity * args.severity_repeat + shots + clean * args.clean_repeat
    print(f"train: {len(severity)} car-damage-severity photos x{args.severity_repeat}, {len(shots)} close-ups, {len(clean)} clean x{args.clean_repeat}; "
          f"val: {len(val_damaged)} damaged (fold {args.val_fold}), {len(val_clean)} clean; loaded in {time.time() - t0:.0f} s", flush=True)

    net = PhotoJudge(args.size, frozen=args.frozen).to(device)
    if args.init:
        net.load_state_dict(torch.load(args.init, map_location=device))
    params = [p for p in net.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=1e-4)
    data = JudgeSet(train, args.size, True, seed=args.seed, colour=args.colour)
    steps = args.epochs * math.ceil(len(data) / args.batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=max(steps, 1), pct_start=0.1)
    for epoch in range(args.epochs):
        data.epoch = epoch
        net.train()
        loader = torch.utils.data.DataLoader(data, batch_size=args.batch, shuffle=True, num_workers=args.workers, drop_last=True,
                                             persistent_workers=False, generator=torch.Generator().manual_seed(args.seed + epoch))
        total, n, te = 0.0, 0, time.time()
        for x, y, cells in loader:
            x, y, cells = x.to(device).float() / 255, y.to(device), cells.to(device)
            photo, cell_logits = net(x)
            loss = loss_of(photo, cell_logits, y, cells)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total, n = total + loss.item(), n + 1
        print(f"epoch {epoch + 1}/{args.epochs}: loss {total / max(n, 1):.4f} in {(time.time() - te) / 60:.1f} min", flush=True)
        torch.save(net.state_dict(), os.path.join(args.out, "last.pt"))
        if epoch == args.epochs - 1 or (epoch + 1) % 2 == 0:
            report(net, val_damaged, val_clean, args.size)

    if args.epochs == 0:
        report(net, val_damaged, val_clean, args.size)
    net = net.cpu().eval()
    net.export_mode = True
    onnx_path = os.path.join(args.out, "model.onnx")
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(net, torch.zeros(1, 3, args.size, args.size), onnx_path, opset_version=17, input_names=["images"],
                      output_names=["scores", "cells"], dynamic_axes={"images": {0: "batch"}, "scores": {0: "batch"}, "cells": {0: "batch"}}, **legacy)
    import onnx
    m = onnx.load(onnx_path)
    for k, v in {"imgsz": json.dumps([args.size, args.size]), "scores": json.dumps(PhotoJudge.SCORES), "cells": json.dumps(PhotoJudge.CELLS),
                 "task": "photo-judgement"}.items():
        m.metadata_props.add(key=k, value=v)
    onnx.save(m, onnx_path)
    print(f"exported {onnx_path} ({os.path.getsize(onnx_path) / 1e6:.1f} MB); {(time.time() - t0) / 60:.1f} min in all", flush=True)


if __name__ == "__main__":
    main()
