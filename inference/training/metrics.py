"""Box mAP as COCO computes it: per class, detections sorted by score matched greedily to unmatched
ground truth at each IoU threshold (0.50:0.95 step 0.05), precision made monotone, averaged over
101 recall points. Used to select the checkpoint; the product's `eval` command is the reference."""
import torch

from loss import box_iou

THRESHOLDS = [0.5 + 0.05 * i for i in range(10)]


def average_precision(tp, scores, n_gt):
    if n_gt == 0:
        return None
    if len(scores) == 0:
        return 0.0
    order = torch.argsort(scores, descending=True)
    tp = tp[order].float()
    fp = 1 - tp
    tpc, fpc = tp.cumsum(0), fp.cumsum(0)
    recall = tpc / n_gt
    precision = tpc / (tpc + fpc)
    for i in range(len(precision) - 2, -1, -1):
        precision[i] = max(precision[i], precision[i + 1])
    ap = 0.0
    for r in torch.linspace(0, 1, 101):
        idx = torch.searchsorted(recall, r.item(), right=False)
        ap += precision[idx].item() if idx < len(precision) else 0.0
    return ap / 101


def evaluate(detections, ground_truth, nc):
    """detections: per image (K, 6) tensors [x1 y1 x2 y2 score class]; ground_truth: per image (M, 5)
    [class x1 y1 x2 y2], same coordinates. Returns {map50, map50_95, per_class: {c: (ap50, ap, n)}}."""
    per_class = {}
    for c in range(nc):
        n_gt = sum(int((g[:, 0] == c).sum()) for g in ground_truth)
        scores, tps = [], [[] for _ in THRESHOLDS]
        for det, gt in zip(detections, ground_truth):
            d = det[det[:, 5] == c]
            g = gt[gt[:, 0] == c][:, 1:]
            if len(d) == 0:
                continue
            d = d[torch.argsort(d[:, 4], descending=True)]
            scores.append(d[:, 4])
            ious = box_iou(d[:, :4], g) if len(g) else torch.zeros(len(d), 0)
            for ti, t in enumerate(THRESHOLDS):
                used = torch.zeros(len(g), dtype=torch.bool)
                hit = torch.zeros(len(d), dtype=torch.bool)
                for i in range(len(d)):
                    if len(g) == 0:
                        break
                    cand = ious[i].clone()
                    cand[used] = -1
                    j = int(cand.argmax())
                    if cand[j] >= t:
                        used[j] = True
                        hit[i] = True
                tps[ti].append(hit)
        s = torch.cat(scores) if scores else torch.zeros(0)
        aps = [average_precision(torch.cat(tp) if tp else torch.zeros(0, dtype=torch.bool), s, n_gt) for tp in tps]
        if aps[0] is not None:
            per_class[c] = (aps[0], sum(aps) / len(aps), n_gt)
    m50 = sum(v[0] for v in per_class.values()) / max(len(per_class), 1)
    m = sum(v[1] for v in per_class.values()) / max(len(per_class), 1)
    return {"map50": m50, "map50_95": m, "per_class": per_class}
