"""Training loss: a task-aligned assigner (as in YOLOv8/TOOD) picks, for each ground-truth box,
the top anchors by score^alpha * IoU^beta among those inside the box; classification is BCE
against IoU-aware soft targets, boxes are regressed with GIoU (the shipped models) or CIoU plus
distribution focal loss (YOLOv8's, for a head with reg_max bins).

The whole batch is assigned at once, on the device the network runs on: the ground truth is padded
to the batch's largest count and masked. A loop over images with tensors copied to the CPU kept a
GPU waiting on Python."""
import math

import torch
import torch.nn.functional as F


def anchor_grid(feats, strides):
    points, stride_t = [], []
    for (box, _), s in zip(feats, strides):
        _, _, h, w = box.shape
        ys, xs = torch.meshgrid(torch.arange(h, dtype=torch.float32, device=box.device), torch.arange(w, dtype=torch.float32, device=box.device), indexing="ij")
        points.append(torch.stack([(xs + 0.5) * s, (ys + 0.5) * s], -1).reshape(-1, 2))
        stride_t.append(torch.full((h * w, 1), float(s), device=box.device))
    return torch.cat(points), torch.cat(stride_t)


def flatten(feats):
    box = torch.cat([b.flatten(2) for b, _ in feats], 2).transpose(1, 2)  # B, N, 4 * reg_max
    cls = torch.cat([c.flatten(2) for _, c in feats], 2).transpose(1, 2)  # B, N, C
    return box.float(), cls.float()


def distances(box_raw, reg_max):
    """ltrb distances in strides: softplus of one number (reg_max 1), else the expectation over the
    reg_max bins (DFL). model.py's export computes the same."""
    if reg_max == 1:
        return F.softplus(box_raw)
    b, n, _ = box_raw.shape
    bins = torch.arange(reg_max, dtype=box_raw.dtype, device=box_raw.device)
    return (box_raw.view(b, n, 4, reg_max).softmax(-1) * bins).sum(-1)


def box_iou(a, b):
    """IoU of every a (..., M, 4) with every b (..., N, 4), xyxy: (..., M, N)."""
    lt = torch.max(a[..., :, None, :2], b[..., None, :, :2])
    rb = torch.min(a[..., :, None, 2:], b[..., None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    area_a = (a[..., 2:] - a[..., :2]).prod(-1)
    area_b = (b[..., 2:] - b[..., :2]).prod(-1)
    return inter / (area_a[..., :, None] + area_b[..., None, :] - inter + 1e-9)


def giou_loss(p, t):
    lt = torch.max(p[:, :2], t[:, :2])
    rb = torch.min(p[:, 2:], t[:, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    union = (p[:, 2:] - p[:, :2]).prod(-1) + (t[:, 2:] - t[:, :2]).prod(-1) - inter + 1e-9
    iou = inter / union
    hull = (torch.max(p[:, 2:], t[:, 2:]) - torch.min(p[:, :2], t[:, :2])).prod(-1) + 1e-9
    return 1 - (iou - (hull - union) / hull)


def ciou_loss(p, t, eps=1e-7):
    """1 - CIoU (Zheng et al.): IoU, less the centres' distance over the hull's diagonal, less the
    aspect ratios' disagreement."""
    pw, ph = p[:, 2] - p[:, 0], (p[:, 3] - p[:, 1]).clamp(min=eps)
    tw, th = t[:, 2] - t[:, 0], (t[:, 3] - t[:, 1]).clamp(min=eps)
    lt = torch.max(p[:, :2], t[:, :2])
    rb = torch.min(p[:, 2:], t[:, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    union = pw * ph + tw * th - inter + eps
    iou = inter / union
    hull = torch.max(p[:, 2:], t[:, 2:]) - torch.min(p[:, :2], t[:, :2])
    diagonal = hull.pow(2).sum(-1) + eps
    centres = ((p[:, :2] + p[:, 2:]) - (t[:, :2] + t[:, 2:])).pow(2).sum(-1) / 4
    v = (4 / math.pi**2) * (torch.atan(tw / th) - torch.atan(pw / ph)).pow(2)
    with torch.no_grad():
        alpha = v / (v - iou + (1 + eps))
    return 1 - (iou - centres / diagonal - v * alpha)


def dfl_loss(box_raw, anchor_points, target_boxes, stride, reg_max):
    """Distribution focal loss: each side's distance (in strides) between two bins, the bins' log
    probabilities weighted by how near the distance is to each."""
    target = torch.cat([anchor_points - target_boxes[:, :2], target_boxes[:, 2:] - anchor_points], -1) / stride
    target = target.clamp(0, reg_max - 1 - 0.01)
    left = target.long()
    weight_left = left + 1 - target
    logits = box_raw.view(-1, reg_max)
    left, weight_left = left.view(-1), weight_left.view(-1)
    loss = F.cross_entropy(logits, left, reduction="none") * weight_left + F.cross_entropy(logits, left + 1, reduction="none") * (1 - weight_left)
    return loss.view(-1, 4).mean(-1)


@torch.no_grad()
def assign(scores, pred_boxes, points, gt_labels, gt_boxes, gt_mask, topk=10, alpha=0.5, beta=6.0):
    """For a batch: scores (B, N, C), predicted boxes (B, N, 4), anchor centres (N, 2), ground truth
    padded to M a batch, labels (B, M), boxes (B, M, 4) and which are real (B, M). Returns target
    class scores (B, N, C), target boxes (B, N, 4) and the positive anchors (B, N)."""
    b, n, c = scores.shape
    m = gt_boxes.shape[1]
    if m == 0:
        return torch.zeros_like(scores), torch.zeros_like(pred_boxes), torch.zeros(b, n, dtype=torch.bool, device=scores.device)
    inside = ((points[None, None] > gt_boxes[:, :, None, :2]) & (points[None, None] < gt_boxes[:, :, None, 2:])).all(-1) & gt_mask[:, :, None]  # B, M, N
    ious = box_iou(gt_boxes, pred_boxes).clamp(min=0) * inside
    class_scores = scores.transpose(1, 2).gather(1, gt_labels[:, :, None].expand(b, m, n))  # B, M, N
    align = class_scores.pow(alpha) * ious.pow(beta) * inside
    top = align.topk(min(topk, n), dim=2).indices
    mask = torch.zeros_like(inside).scatter_(2, top, True) & inside
    # A gt whose box holds no anchor centre (tiny boxes) still gets its nearest anchor.
    empty = ~mask.any(2) & gt_mask
    if empty.any():
        centres = (gt_boxes[..., :2] + gt_boxes[..., 2:]) / 2
        nearest = torch.cdist(centres, points[None].expand(b, n, 2)).argmin(2)  # B, M
        mask |= F.one_hot(nearest, n).bool() & empty[:, :, None]
    # An anchor claimed by several gts goes to the one it overlaps most.
    multi = mask.sum(1) > 1  # B, N
    if multi.any():
        best = F.one_hot(ious.argmax(1), m).transpose(1, 2).bool()  # B, M, N
        mask = torch.where(multi[:, None, :], best, mask)
    fg = mask.any(1)
    gt_idx = mask.float().argmax(1)  # B, N
    align = align * mask
    norm = (align / (align.amax(2, keepdim=True) + 1e-9)) * (ious * mask).amax(2, keepdim=True)
    weight = norm.amax(1)  # B, N
    target_boxes = gt_boxes.gather(1, gt_idx[..., None].expand(b, n, 4))
    labels = gt_labels.gather(1, gt_idx)
    target_scores = F.one_hot(labels, c).to(scores.dtype) * (weight.clamp(min=0.05) * fg)[..., None]
    return target_scores, target_boxes, fg


def padded(targets, size, device):
    """A batch's targets (a list of (K, 5) tensors: class, normalised xyxy) as labels (B, M), boxes
    in pixels (B, M, 4) and a mask of the real ones (B, M)."""
    m = max((len(t) for t in targets), default=0)
    labels = torch.zeros(len(targets), m, dtype=torch.long)
    boxes = torch.zeros(len(targets), m, 4)
    mask = torch.zeros(len(targets), m, dtype=torch.bool)
    for i, t in enumerate(targets):
        labels[i, : len(t)] = t[:, 0].long()
        boxes[i, : len(t)] = t[:, 1:] * size
        mask[i, : len(t)] = True
    return labels.to(device), boxes.to(device), mask.to(device)


def decode(feats, strides, reg_max=1):
    """The network's per-level outputs as anchor centres (N, 2), their strides (N, 1), raw box
    outputs (B, N, 4 * reg_max), class logits (B, N, C) and boxes in input pixels (B, N, 4, xyxy)."""
    points, stride_t = anchor_grid(feats, strides)
    box_raw, cls_logits = flatten(feats)
    d = distances(box_raw, reg_max) * stride_t
    return points, stride_t, box_raw, cls_logits, torch.cat([points - d[..., :2], points + d[..., 2:]], -1)


def detection_loss(feats, targets, strides, nc, size, box_gain=5.0, cls_gain=1.0, reg_max=1, dfl_gain=1.5):
    """The loss of a batch: feats are the network's per-level (box, class) outputs, targets a list of
    (K, 5) tensors. reg_max 1 (the shipped models) regresses boxes with GIoU; more bins with CIoU and
    DFL, as YOLOv8 does."""
    points, stride_t, box_raw, cls_logits, pred_boxes = decode(feats, strides, reg_max)
    labels, gt_boxes, gt_mask = padded(targets, size, cls_logits.device)
    t_scores, t_boxes, fg = assign(cls_logits.detach().sigmoid(), pred_boxes.detach(), points, labels, gt_boxes, gt_mask)
    norm = t_scores.sum().clamp(min=1.0)
    cls_loss = F.binary_cross_entropy_with_logits(cls_logits, t_scores, reduction="sum") / norm
    w = t_scores.sum(-1)[fg]
    if reg_max == 1:
        box_loss = (giou_loss(pred_boxes[fg], t_boxes[fg]) * w).sum() / norm
        dfl = torch.zeros((), device=box_loss.device)
    else:
        box_loss = (ciou_loss(pred_boxes[fg], t_boxes[fg]) * w).sum() / norm
        anchor_points = points[None].expand(fg.shape[0], -1, -1)[fg]
        strides_fg = stride_t[None].expand(fg.shape[0], -1, -1)[fg]
        dfl = (dfl_loss(box_raw[fg], anchor_points, t_boxes[fg], strides_fg, reg_max) * w).sum() / norm
    return box_gain * box_loss + cls_gain * cls_loss + dfl_gain * dfl, box_loss.detach(), cls_loss.detach()
