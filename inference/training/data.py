"""Datasets for training, preloaded into memory at the training size (the whole car-damage train
split at 384 px is about 1.2 GB of uint8), with augmentation done per batch in torch."""
import json
import math
import os
import random

import numpy as np
import torch
from PIL import Image


def _image_files(folder):
    return sorted(f for f in os.listdir(folder) if f.lower().endswith((".jpg", ".jpeg", ".png")))


def _tensor(img):
    return torch.from_numpy(np.array(img)).permute(2, 0, 1).contiguous()


def _square(img, size):
    """A photo resized to the square (these datasets are square already)."""
    return _tensor(img.resize((size, size), Image.BILINEAR))


def _load(path, size):
    img = Image.open(path).convert("RGB")
    return _square(img, size), img.size


def yolo_folder(root, size):
    """A YOLO-format folder (images/, labels/). A label line is `class cx cy w h` or a polygon
    `class x1 y1 x2 y2 ...`, normalised; a polygon's box is its extent. Images are resized to a
    square (these datasets are square already); boxes are returned normalised xyxy."""
    images, targets, names = [], [], []
    for f in _image_files(os.path.join(root, "images")):
        img, _ = _load(os.path.join(root, "images", f), size)
        boxes = []
        label = os.path.join(root, "labels", os.path.splitext(f)[0] + ".txt")
        if os.path.exists(label):
            for line in open(label):
                v = line.split()
                if len(v) < 5:
                    continue
                c, nums = int(v[0]), list(map(float, v[1:]))
                if len(nums) == 4:
                    cx, cy, w, h = nums
                    box = [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2]
                else:
                    xs, ys = nums[0::2], nums[1::2]
                    box = [min(xs), min(ys), max(xs), max(ys)]
                box = [min(max(b, 0.0), 1.0) for b in box]
                if box[2] - box[0] > 1e-3 and box[3] - box[1] > 1e-3:
                    boxes.append([c] + box)
        images.append(img)
        targets.append(torch.tensor(boxes, dtype=torch.float32).reshape(-1, 5))
        names.append(f)
    return images, targets, names


def coco_folder(root, size, skip_background=True):
    """The car-parts layout: JPEGImages/ and a COCO annotations.json; classes in category order,
    `_background_` left out. Returns the same shapes as yolo_folder, plus the class names."""
    d = json.load(open(os.path.join(root, "annotations.json")))
    cats = [c for c in sorted(d["categories"], key=lambda c: c["id"]) if not (skip_background and c["name"] == "_background_")]
    index = {c["id"]: i for i, c in enumerate(cats)}
    by_image = {}
    for a in d["annotations"]:
        by_image.setdefault(a["image_id"], []).append(a)
    images, targets, names = [], [], []
    for im in sorted(d["images"], key=lambda i: i["id"]):
        path = os.path.join(root, "JPEGImages", im["file_name"])
        if not os.path.exists(path):
            continue
        img, (w, h) = _load(path, size)
        boxes = []
        for a in by_image.get(im["id"], []):
            if a["category_id"] not in index:
                continue
            x, y, bw, bh = a["bbox"]
            if bw > 1 and bh > 1:
                boxes.append([index[a["category_id"]], x / w, y / h, (x + bw) / w, (y + bh) / h])
        images.append(img)
        targets.append(torch.tensor(boxes, dtype=torch.float32).reshape(-1, 5))
        names.append(im["file_name"])
    return images, targets, [c["name"] for c in cats]


def _letterbox(img, size):
    """A photo scaled to fit the square with grey padding, as the product letterboxes photos, and a
    function taking a box in the photo's pixels (x1, y1, x2, y2) to normalised xyxy of the square."""
    w, h = img.size
    r = size / max(w, h)
    nw, nh = max(1, round(w * r)), max(1, round(h * r))
    px, py = (size - nw) // 2, (size - nh) // 2
    canvas = Image.new("RGB", (size, size), (114, 114, 114))
    canvas.paste(img.resize((nw, nh), Image.BILINEAR), (px, py))
    return _tensor(canvas), lambda x1, y1, x2, y2: [(x1 * r + px) / size, (y1 * r + py) / size, (x2 * r + px) / size, (y2 * r + py) / size]


def _letterboxed(img, size):
    return _letterbox(img, size)[0]


def whole_car_negatives(root, size):
    """The car-parts training photos (undamaged cars from front, back and the diagonals, as a
    walkaround shows them), letterboxed, with no damage boxes: what the damage model must not fire
    on. Never the test photos: those measure the product's clean-car false findings."""
    folder = os.path.join(root, "JPEGImages")
    return [_letterboxed(Image.open(os.path.join(folder, f)).convert("RGB"), size) for f in _image_files(folder)]


# inference/detection/tiles.ts's overlap: the tiles trained on are the tiles the product searches.
TILE_OVERLAP = 0.2


def tile_regions(width, height, n):
    """tiles.ts's tileRegions: the n x n tiles of a photo, each overlapping its neighbours."""
    if n < 2:
        return []
    tw = min(width, math.ceil(width / (n - (n - 1) * TILE_OVERLAP)))
    th = min(height, math.ceil(height / (n - (n - 1) * TILE_OVERLAP)))
    at = lambda i, length, t: round(i * (length - t) / (n - 1))  # noqa: E731
    return [(at(col, width, tw), at(row, height, th), tw, th) for row in range(n) for col in range(n)]


def tiles(photo, boxes, n, size):
    """A whole-car photo's n x n tiles, each letterboxed as the product letterboxes a tile, with the
    boxes (class and normalised xyxy of the photo) that show enough in it, in the tile's square.
    With DETECTION_TILES the product searches these; trained only on whole frames, the model fires
    on clean panels seen that large, and misses damage it has never seen at that scale."""
    W, H = photo.size
    out = []
    for left, top, w, h in tile_regions(W, H, n):
        canvas, to_square = _letterbox(photo.crop((left, top, left + w, top + h)), size)
        kept = []
        for c, x1, y1, x2, y2 in boxes:
            bx = [x1 * W, y1 * H, x2 * W, y2 * H]
            cx1, cy1 = max(bx[0], left), max(bx[1], top)
            cx2, cy2 = min(bx[2], left + w), min(bx[3], top + h)
            if cx2 <= cx1 or cy2 <= cy1 or (cx2 - cx1) * (cy2 - cy1) < 0.35 * (bx[2] - bx[0]) * (bx[3] - bx[1]):
                continue
            kept.append([c, *to_square(cx1 - left, cy1 - top, cx2 - left, cy2 - top)])
        out.append((canvas, torch.tensor(kept, dtype=torch.float32).reshape(-1, 5)))
    return out


def whole_car_tiles(root, n, size):
    """whole_car_negatives' photos as n x n tiles, no boxes."""
    folder = os.path.join(root, "JPEGImages")
    return [img for f in _image_files(folder) for img, _ in tiles(Image.open(os.path.join(folder, f)).convert("RGB"), [], n, size)]


# Where each damage class can be on a car, by car-parts' part names: copy-paste puts it only there.
DAMAGE_ON_PARTS = {
    "crack": ("bumper", "door", "hood", "trunk", "tailgate"),
    "dent": ("bumper", "door", "hood", "trunk", "tailgate"),
    "scratch": ("bumper", "door", "hood", "trunk", "tailgate"),
    "glass shatter": ("glass",),
    "lamp broken": ("light",),
    # A flat is the tyre's shape, which a paste clipped to a round wheel cannot make: not pasted.
    "tire flat": (),
}
# How large a pasted damage is: a share of its part's longer side for what fills a part, else of the
# photo's longer side (dents and scratches on car-damage-severity's whole cars: a median 2%), never
# over PANEL_SHARE of the part.
DAMAGE_SCALE = {"glass shatter": (0.3, 0.8), "lamp broken": (0.5, 1.0)}
PHOTO_SCALE, PANEL_SHARE = (0.02, 0.12), 0.6


def damage_segments(root, names, min_px=12):
    """Every damage polygon of a YOLO folder (car-damage's train split) cut out of its photo: (RGB
    crop, mask, class id). What copy-paste pastes."""
    from PIL import ImageDraw

    segments = []
    for f in _image_files(os.path.join(root, "images")):
        label = os.path.join(root, "labels", os.path.splitext(f)[0] + ".txt")
        if not os.path.exists(label):
            continue
        polygons = [(int(v[0]), list(map(float, v[1:]))) for v in (line.split() for line in open(label)) if len(v) > 7]
        if not polygons:
            continue
        photo = Image.open(os.path.join(root, "images", f)).convert("RGB")
        W, H = photo.size
        for c, nums in polygons:
            pts = [(x * W, y * H) for x, y in zip(nums[0::2], nums[1::2])]
            x1, y1 = max(0, int(min(p[0] for p in pts))), max(0, int(min(p[1] for p in pts)))
            x2, y2 = min(W, int(math.ceil(max(p[0] for p in pts)))), min(H, int(math.ceil(max(p[1] for p in pts))))
            if x2 - x1 < min_px or y2 - y1 < min_px:
                continue
            mask = Image.new("L", (x2 - x1, y2 - y1), 0)
            ImageDraw.Draw(mask).polygon([(x - x1, y - y1) for x, y in pts], fill=255)
            segments.append((photo.crop((x1, y1, x2, y2)), mask, c))
    return segments


def paste_on_part(photo, part, crop, mask, name, rng):
    """Pastes one damage segment (crop, mask; class `name`) onto `part` (a car-parts COCO annotation)
    of `photo`, in place: scaled to the part, clipped to it, its colour moved to the panel's while its
    texture is kept. Returns the pasted damage's box (x1, y1, x2, y2) in pixels, or None where nothing
    of it landed on the part."""
    from PIL import ImageDraw

    W, H = photo.size
    part_mask = Image.new("L", (W, H), 0)
    for poly in part["segmentation"]:
        ImageDraw.Draw(part_mask).polygon(list(zip(poly[0::2], poly[1::2])), fill=255)
    px, py, pw, ph = part["bbox"]
    if name in DAMAGE_SCALE:
        side = rng.uniform(*DAMAGE_SCALE[name]) * max(pw, ph)
    else:
        side = min(rng.uniform(*PHOTO_SCALE) * max(W, H), PANEL_SHARE * max(pw, ph))
    r = side / max(crop.size)
    sw, sh = max(4, round(crop.size[0] * r)), max(4, round(crop.size[1] * r))
    crop, mask = crop.resize((sw, sh), Image.BILINEAR), mask.resize((sw, sh), Image.BILINEAR)
    inside = np.argwhere(np.array(part_mask) > 0)
    if len(inside) == 0:
        return None
    cy, cx = inside[rng.randrange(len(inside))]
    left, top = int(cx - sw / 2), int(cy - sh / 2)
    # The damage's own contrast on the panel's colour: a red car's dent pasted on a white
    # car would otherwise teach "a patch of another colour".
    region = np.array(photo.crop((left, top, left + sw, top + sh)), dtype=np.float32)
    seg = np.array(crop, dtype=np.float32)
    m = np.array(mask, dtype=np.float32)[..., None] / 255
    if m.sum() < 1:
        return None
    seg = seg - (seg * m).sum((0, 1)) / m.sum() + (region * m).sum((0, 1)) / m.sum()
    clipped = Image.fromarray((m[..., 0] * np.array(part_mask.crop((left, top, left + sw, top + sh)), dtype=np.float32)).astype(np.uint8))
    photo.paste(Image.fromarray(seg.clip(0, 255).astype(np.uint8)), (left, top), clipped)
    ys, xs = np.nonzero(np.array(clipped) > 127)
    if len(xs) == 0:
        return None
    return (left + xs.min(), top + ys.min(), left + xs.max() + 1, top + ys.max() + 1)


def pasted_whole_cars(root, segments, names, size, per_photo=(1, 3), repeat=1, rng=None):
    """Copy-paste onto what the product sees: the car-parts training photos (clean whole cars) with
    damage cut from the close-ups pasted onto parts where it occurs (a dent on a door, a shattered
    pane on glass; DAMAGE_ON_PARTS), scaled to the part, clipped to it, its colour moved to the
    panel's while its texture is kept, then letterboxed as the product letterboxes photos. Returns
    images and targets as the other loaders do."""
    rng = rng or random.Random(0)
    d = json.load(open(os.path.join(root, "annotations.json")))
    part_names = {c["id"]: c["name"] for c in d["categories"]}
    by_image = {}
    for a in d["annotations"]:
        by_image.setdefault(a["image_id"], []).append(a)
    by_class = {}
    for seg in segments:
        if DAMAGE_ON_PARTS[names[seg[2]]]:
            by_class.setdefault(seg[2], []).append(seg)
    images, targets = [], []
    for im in sorted(d["images"], key=lambda i: i["id"]):
        path = os.path.join(root, "JPEGImages", im["file_name"])
        if not os.path.exists(path):
            continue
        clean = Image.open(path).convert("RGB")
        W, H = clean.size
        for _ in range(repeat):
            photo, boxes = clean.copy(), []
            for _ in range(rng.randint(*per_photo)):
                c = rng.choice(sorted(by_class))
                parts = [a for a in by_image.get(im["id"], []) if any(k in part_names[a["category_id"]] for k in DAMAGE_ON_PARTS[names[c]]) and a.get("segmentation")]
                if not parts:
                    continue
                part = rng.choice(parts)
                crop, mask, _ = rng.choice(by_class[c])
                box = paste_on_part(photo, part, crop, mask, names[c], rng)
                if box is not None:
                    boxes.append((c, *box))
            img, to_square = _letterbox(photo, size)
            images.append(img)
            targets.append(torch.tensor([[c, *to_square(*box)] for c, *box in boxes], dtype=torch.float32).reshape(-1, 5))
    return images, targets


FOLDS = 5
HELD_OUT_FOLD = 0


def fold_of(file_name):
    """inference/evaluation/held-out.ts's rule: which fifth of car-damage-severity a photo is in,
    by hash of its source photo's name."""
    import hashlib
    import re
    source = re.sub(r"_(jpe?g|png)_jpg\.rf\.[0-9a-f]+\.jpg$", "", file_name, flags=re.I)
    source = re.sub(r"\.rf\.[0-9a-f]+\.jpg$", "", source, flags=re.I)
    return hashlib.sha256(source.encode()).digest()[0] % FOLDS


def held_out(file_name):
    """The fifth of car-damage-severity that is never trained on (eval-product measures it)."""
    return fold_of(file_name) == HELD_OUT_FOLD


def severity_folder(root, size, class_of, n_tiles=0):
    """car-damage-severity's photos not held out, with its dent and scratch boxes as those classes
    (`class_of` maps "dent" and "scratch" to class ids). Its "broken" boxes are not CarDD classes:
    a photo with one is left out whole, rather than teaching that a broken part is background.
    With `n_tiles` over 1, each photo's n x n tiles (`tiles`) are added too."""
    d = json.load(open(os.path.join(root, "annotations.json")))
    cats = {c["id"]: c["name"] for c in d["categories"]}
    by_image = {}
    for a in d["annotations"]:
        by_image.setdefault(a["image_id"], []).append(a)
    images, targets, skipped = [], [], 0
    for im in sorted(d["images"], key=lambda i: i["file_name"]):
        if held_out(im["file_name"]):
            continue
        boxes, broken = [], False
        for a in by_image.get(im["id"], []):
            kind = cats[a["category_id"]].split("-")[-1]
            if kind == "broken":
                broken = True
            elif kind in class_of:
                x, y, bw, bh = a["bbox"]
                W, H = im["width"], im["height"]
                if bw > 1 and bh > 1:
                    boxes.append([class_of[kind], x / W, y / H, (x + bw) / W, (y + bh) / H])
        if broken:
            skipped += 1
            continue
        photo = Image.open(os.path.join(root, "images", im["file_name"])).convert("RGB")
        images.append(_square(photo, size))
        targets.append(torch.tensor(boxes, dtype=torch.float32).reshape(-1, 5))
        if n_tiles > 1:
            for tile, tile_boxes in tiles(photo, boxes, n_tiles, size):
                images.append(tile)
                targets.append(tile_boxes)
    return images, targets, skipped


def background_strips(root, size, margin=8, min_px=96):
    """Photos with no car in them, for the car-parts model: the strips of each car-parts photo
    beside, above and below the car (its outermost part boxes, `margin` px out), where at least
    `min_px` each way, letterboxed into the square as the product letterboxes photos. Without them
    the model only ever sees cars and the "no vehicle" gate lets most street backgrounds through.
    The same cut as `npm run eval:parts` makes from the test photos to measure that gate."""
    d = json.load(open(os.path.join(root, "annotations.json")))
    by_image = {}
    for a in d["annotations"]:
        by_image.setdefault(a["image_id"], []).append(a["bbox"])
    strips = []
    for im in sorted(d["images"], key=lambda i: i["id"]):
        path, boxes = os.path.join(root, "JPEGImages", im["file_name"]), by_image.get(im["id"])
        if not boxes or not os.path.exists(path):
            continue
        W, H = im["width"], im["height"]
        x1, y1 = math.floor(min(b[0] for b in boxes)) - margin, math.floor(min(b[1] for b in boxes)) - margin
        x2, y2 = math.ceil(max(b[0] + b[2] for b in boxes)) + margin, math.ceil(max(b[1] + b[3] for b in boxes)) + margin
        photo = Image.open(path).convert("RGB")
        for left, top, w, h in ((0, 0, x1, H), (x2, 0, W - x2, H), (0, 0, W, y1), (0, y2, W, H - y2)):
            if w < min_px or h < min_px:
                continue
            strips.append(_letterboxed(photo.crop((left, top, left + w, top + h)), size))
    return strips


def _place(img, boxes, size, new, ox, oy):
    """img (3, S, S) scaled to new x new and put on a size x size canvas: cropped from (ox, oy) where
    larger, else placed at (ox, oy) on grey. Boxes (class, normalised xyxy of img) follow it."""
    scaled = torch.nn.functional.interpolate(img[None], size=(new, new), mode="bilinear", align_corners=False)[0]
    canvas = torch.full((3, size, size), 114.0)
    if new >= size:
        canvas = scaled[:, oy:oy + size, ox:ox + size]
        shift = (-ox, -oy)
    else:
        canvas[:, oy:oy + new, ox:ox + new] = scaled
        shift = (ox, oy)
    if len(boxes):
        xyxy = boxes[:, 1:] * new
        xyxy[:, [0, 2]] += shift[0]
        xyxy[:, [1, 3]] += shift[1]
        area0 = (xyxy[:, 2] - xyxy[:, 0]) * (xyxy[:, 3] - xyxy[:, 1])
        xyxy = xyxy.clamp(0, size)
        area1 = (xyxy[:, 2] - xyxy[:, 0]) * (xyxy[:, 3] - xyxy[:, 1])
        # A box cut by the frame stays if enough of it shows, or if what shows fills a good part of
        # the frame: on a close-up of a door, the door is still the door.
        keep = ((area1 > 0.35 * area0) | (area1 > 0.15 * size * size)) & (xyxy[:, 2] - xyxy[:, 0] > 2) & (xyxy[:, 3] - xyxy[:, 1] > 2)
        boxes = torch.cat([boxes[:, :1], xyxy / size], 1)[keep]
    return canvas, boxes


def mosaic(images, targets, indices, size, scale):
    """YOLOv8's mosaic: four photos around a random centre of a 2 x size canvas, scaled by a factor
    from `scale` about the canvas's centre and cut to size x size there, so each shows at 0.5 to 1.5
    times its size and a damage meets other cars' panels and backgrounds around it."""
    big = 2 * size
    canvas = torch.full((3, big, big), 114.0)
    xc, yc = (int(random.uniform(0.5 * size, 1.5 * size)) for _ in range(2))
    placed = []
    for k, j in enumerate(indices):
        img = images[j].float()
        s = img.shape[-1]
        if k == 0:
            x1a, y1a, x2a, y2a = max(xc - s, 0), max(yc - s, 0), xc, yc
            x1b, y1b = s - (x2a - x1a), s - (y2a - y1a)
        elif k == 1:
            x1a, y1a, x2a, y2a = xc, max(yc - s, 0), min(xc + s, big), yc
            x1b, y1b = 0, s - (y2a - y1a)
        elif k == 2:
            x1a, y1a, x2a, y2a = max(xc - s, 0), yc, xc, min(big, yc + s)
            x1b, y1b = s - (x2a - x1a), 0
        else:
            x1a, y1a, x2a, y2a = xc, yc, min(xc + s, big), min(big, yc + s)
            x1b, y1b = 0, 0
        canvas[:, y1a:y2a, x1a:x2a] = img[:, y1b:y1b + (y2a - y1a), x1b:x1b + (x2a - x1a)]
        t = targets[j]
        if len(t):
            xyxy = t[:, 1:] * s
            xyxy[:, [0, 2]] += x1a - x1b
            xyxy[:, [1, 3]] += y1a - y1b
            # Parts of a photo outside its quadrant are not on the canvas: a box keeps what shows.
            xyxy[:, [0, 2]] = xyxy[:, [0, 2]].clamp(x1a, x2a)
            xyxy[:, [1, 3]] = xyxy[:, [1, 3]].clamp(y1a, y2a)
            placed.append(torch.cat([t[:, :1], xyxy / big], 1))
    boxes = torch.cat(placed) if placed else torch.zeros(0, 5)
    f = random.uniform(*scale)
    new = max(8, int(big * f))
    jitter = lambda: random.uniform(-0.1, 0.1) * size  # noqa: E731
    if new >= size:
        ox, oy = (int(min(max(new / 2 - size / 2 + jitter(), 0), new - size)) for _ in range(2))
    else:
        ox, oy = (int(min(max(size / 2 - new / 2 + jitter(), 0), size - new)) for _ in range(2))
    return _place(canvas, boxes, size, new, ox, oy)


# RGB to YIQ, whose I and Q turned about Y turn the hue and keep the brightness.
_YIQ = torch.tensor([[0.299, 0.587, 0.114], [0.596, -0.274, -0.322], [0.211, -0.523, 0.312]])
_RGB = torch.linalg.inv(_YIQ)


def hue_turn(canvas, fraction):
    """The hue turned by `fraction` of a full turn."""
    a = 2 * math.pi * fraction
    turn = torch.tensor([[1.0, 0.0, 0.0], [0.0, math.cos(a), -math.sin(a)], [0.0, math.sin(a), math.cos(a)]])
    return torch.einsum("ij,jhw->ihw", _RGB @ turn @ _YIQ, canvas)


def augment(img, boxes, size, flip_map=None, zoom_max=1.25, scale=(0.6, 1.25), hue=0.0):
    """Random zoom (crop in or pad out, by a factor from `scale`), then `flip_and_colour`. A
    `zoom_max` over 1.25 makes half the samples close-ups, zoomed in 1.25 to `zoom_max` times, as
    damage is photographed."""
    s = random.uniform(*scale) if zoom_max <= 1.25 or random.random() < 0.5 else random.uniform(1.25, zoom_max)
    new = max(8, int(size * s))
    ox, oy = (random.randint(0, abs(new - size)) for _ in range(2))
    return flip_and_colour(*_place(img.float(), boxes.clone(), size, new, ox, oy), flip_map, hue)


def flip_and_colour(canvas, boxes, flip_map=None, hue=0.0):
    """Horizontal flip and colour jitter. `flip_map` swaps class ids on a flip (left_door <->
    right_door for parts); `hue` turns the hue by up to that fraction of a turn."""
    if random.random() < 0.5:
        canvas = canvas.flip(2)
        if len(boxes):
            x1 = 1 - boxes[:, 3]
            x2 = 1 - boxes[:, 1]
            boxes[:, 1], boxes[:, 3] = x1, x2
            if flip_map:
                boxes[:, 0] = torch.tensor([flip_map.get(int(c), int(c)) for c in boxes[:, 0]], dtype=torch.float32)
    # Brightness, contrast and saturation, as phone photos in sun and shade differ.
    b = random.uniform(0.7, 1.3)
    c = random.uniform(0.7, 1.3)
    mean = canvas.mean()
    canvas = (canvas - mean) * c + mean * b
    grey = canvas.mean(0, keepdim=True)
    canvas = grey + (canvas - grey) * random.uniform(0.6, 1.4)
    if hue > 0:
        canvas = hue_turn(canvas, random.uniform(-hue, hue))
    return canvas.clamp(0, 255), boxes


class Augmented(torch.utils.data.Dataset):
    """The training images, each drawn augmented (a mosaic with probability `mosaic`), for a
    DataLoader whose workers augment while the device trains."""

    def __init__(self, images, targets, size, flip_map=None, zoom_max=1.25, scale=(0.6, 1.25), hue=0.0, mosaic=0.0):
        self.images, self.targets, self.size = images, targets, size
        self.options = dict(flip_map=flip_map, zoom_max=zoom_max, scale=scale, hue=hue)
        self.mosaic = mosaic

    def __len__(self):
        return len(self.images)

    def __getitem__(self, j):
        if self.mosaic > 0 and random.random() < self.mosaic:
            four = [j, *random.sample(range(len(self.images)), 3)]
            canvas, boxes = mosaic(self.images, self.targets, four, self.size, self.options["scale"])
            img, boxes = flip_and_colour(canvas, boxes, self.options["flip_map"], self.options["hue"])
        else:
            img, boxes = augment(self.images[j], self.targets[j], self.size, **self.options)
        return img, boxes, j


def _collate(items):
    return torch.stack([i[0] for i in items]) / 255.0, [i[1] for i in items], [i[2] for i in items]


def batches(images, targets, batch_size, size, train=True, flip_map=None, zoom_max=1.25, scale=(0.6, 1.25), hue=0.0, mosaic=0.0, workers=0):
    """An epoch's batches: (images scaled to 0-1, targets, indices). The order is drawn from Python's
    random, so with no workers the samples are those drawn before the DataLoader came in."""
    order = list(range(len(images)))
    if train:
        random.shuffle(order)
    chunks = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    if not train:
        for idx in chunks:
            yield torch.stack([images[j].float() for j in idx]) / 255.0, [targets[j] for j in idx], idx
        return
    dataset = Augmented(images, targets, size, flip_map, zoom_max, scale, hue, mosaic)
    yield from torch.utils.data.DataLoader(dataset, batch_sampler=chunks, num_workers=workers, collate_fn=_collate, pin_memory=torch.cuda.is_available())


def repeated_by_class(images, targets, repeat):
    """Class-balanced sampling: each image holding a box of a class in `repeat` (class index -> N)
    appears N times in all, the largest N where it holds several such classes; the others once.
    Returns the images and targets to add to the originals."""
    extra_images, extra_targets = [], []
    for img, tgt in zip(images, targets):
        n = max([repeat.get(int(c), 1) for c in tgt[:, 0].tolist()], default=1)
        extra_images += [img] * (n - 1)
        extra_targets += [tgt] * (n - 1)
    return extra_images, extra_targets
