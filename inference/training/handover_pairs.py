"""Before/after pairs for the handover evaluation (inference/evaluation/handover-eval.ts), built with
training's copy-paste (data.paste_on_part) from photos no model trained on: the car-parts test
photos (clean whole cars) and damage cut from car-damage's valid split.

For each car: the "before" photo has one damage pasted on a part (pre-existing). The "after" photo is
that photo taken again from a slightly different spot (cropped 0-8% on each side by its own amount,
scaled back, a little brighter or darker), with a second damage pasted on another part: new. Each
damage's box is written for both photos (the pre-existing one moved with the crop).

usage: python3 handover_pairs.py <out dir> [pairs] [seed]
"""
import json
import os
import random
import sys

from PIL import Image, ImageEnhance

from data import DAMAGE_ON_PARTS, damage_segments, paste_on_part

DATASETS = os.path.join(os.path.dirname(__file__), "../../../shared/datasets")
NAMES = ["crack", "dent", "glass shatter", "lamp broken", "scratch", "tire flat"]


def main(out, pairs, seed):
    rng = random.Random(seed)
    os.makedirs(out, exist_ok=True)
    segments = [s for s in damage_segments(os.path.join(DATASETS, "car-damage/valid"), NAMES) if DAMAGE_ON_PARTS[NAMES[s[2]]]]
    root = os.path.join(DATASETS, "car-parts/testset")
    d = json.load(open(os.path.join(root, "annotations.json")))
    part_names = {c["id"]: c["name"] for c in d["categories"]}
    by_image = {}
    for a in d["annotations"]:
        if a.get("segmentation"):
            by_image.setdefault(a["image_id"], []).append(a)
    images = sorted(d["images"], key=lambda i: i["id"])
    rng.shuffle(images)
    manifest = []
    for im in images:
        if len(manifest) >= pairs:
            break
        path = os.path.join(root, "JPEGImages", im["file_name"])
        if not os.path.exists(path):
            continue

        def paste(photo, avoid=None):
            for _ in range(20):
                crop, mask, c = rng.choice(segments)
                name = NAMES[c]
                parts = [a for a in by_image.get(im["id"], []) if any(k in part_names[a["category_id"]] for k in DAMAGE_ON_PARTS[name])]
                parts = [a for a in parts if a["id"] != avoid]
                if not parts:
                    continue
                part = rng.choice(parts)
                box = paste_on_part(photo, part, crop, mask, name, rng)
                if box is not None:
                    return {"type": name.replace(" ", "_"), "part": part_names[part["category_id"]], "part_id": part["id"], "box": [int(v) for v in box]}
            return None

        before = Image.open(path).convert("RGB")
        W, H = before.size
        old = paste(before)
        if old is None:
            continue
        # The same car from a step aside: another framing, another exposure.
        l, t, r, b = (round(rng.uniform(0, 0.08) * s) for s in (W, H, W, H))
        sx, sy = W / (W - l - r), H / (H - t - b)
        moved = [round((old["box"][0] - l) * sx), round((old["box"][1] - t) * sy), round((old["box"][2] - l) * sx), round((old["box"][3] - t) * sy)]
        # The new damage goes on another part than the old one, pasted before the reframing: the
        # part annotations are the uncropped photo's.
        fresh = before.copy()
        new = paste(fresh, avoid=old["part_id"])
        if new is None:
            continue
        after = fresh.crop((l, t, W - r, H - b)).resize((W, H), Image.BILINEAR)
        after = ImageEnhance.Brightness(after).enhance(rng.uniform(0.85, 1.15))
        new_box = [round((new["box"][0] - l) * sx), round((new["box"][1] - t) * sy), round((new["box"][2] - l) * sx), round((new["box"][3] - t) * sy)]
        n = len(manifest)
        before.save(os.path.join(out, f"{n:03d}-before.jpg"), quality=92)
        after.save(os.path.join(out, f"{n:03d}-after.jpg"), quality=92)
        manifest.append(
            {
                "car": im["file_name"],
                "before": f"{n:03d}-before.jpg",
                "after": f"{n:03d}-after.jpg",
                "old": {**old, "box_after": moved},
                "new": {**new, "box": new_box},
            }
        )
    json.dump(manifest, open(os.path.join(out, "manifest.json"), "w"), indent=1)
    print(f"{len(manifest)} pairs in {out}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 100, int(sys.argv[3]) if len(sys.argv) > 3 else 0)
