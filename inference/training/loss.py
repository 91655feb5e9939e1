"""Training loss: a task-aligned assigner (as in YOLOv8/TOOD) picks, for each ground-truth box,
the top anchors by score^alpha * IoU^beta among those inside the box; classification is BCE
against IoU-aware soft targets, boxes are GIoU-regressed."""
import torch
import torch.nn.functional as F


def anchor_grid(feats, strides):
    points, stride_t = [], []
    for (box, _), s in zip(feats, strides):
        _, _, h, w = box.shape
        ys, xs = torch.meshgrid(torch.arange(h, dtype=torch.float32), torch.arange(w, dtype=torch.float32), indexing="ij")
        points.append(torch.stack([(xs + 0.5) * s, (ys + 0.5) * s], -1).reshape(-1, 2))
        stride_t.append(torch.full((h * w, 1), float(s)))
    return torch.cat(points), torch.cat(stride_t)


def flatten(feats, nc):
    box = torch.cat([b.flatten(2) for b, _ in feats], 2).transpose(1, 2)  # B, N, 4
    cls = torch.cat([c.flatten(2) for _, c in feats], 2).transpose(1, 2)  # B, N, C
    return box, cls


def decode(box_raw, points, strides):
    d = F.softplus(box_raw) * strides
    return torch.cat([points - d[..., :2], points + d[..., 2:]], -1)


def box_iou(a, b):
    """IoU of every a (M,4) with every b (N,4), xyxy."""
    lt = torch.max(a[:, None, :2], b[None, :, :2])
    rb = torch.min(a[:, None, 2:], b[None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    area_a = (a[:, 2:] - a[:, :2]).prod(-1)
    area_b = (b[:, 2:] - b[:, :2]).prod(-1)
    return inter / (area_a[:, None] + area_b[None] - inter + 1e-9)


def giou_loss(p, t):
    lt = torch.max(p[:, :2], t[:, :2])
    rb = torch.min(p[:, 2:], t[:, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    union = (p[:, 2:] - p[:, :2]).prod(-1) + (t[:, 2:] - t[:, :2]).prod(-1) - inter + 1e-9
    iou = inter / union
    hull = (torch.max(p[:, 2:], t[:, 2:]) - torch.min(p[:, :2], t[:, :2])).prod(-1) + 1e-9
    return 1 - (iou - (hull - union) / hull)


@torch.no_grad()
def assign(scores, pred_boxes, points, gt_labels, gt_boxes, topk=10, alpha=0.5, beta=6.0):
    """For one image: target class scores (N, C) and target boxes (N, 4), and the positive mask."""
    n, c = scores.shape
    target_scores = torch.zeros(n, c)
    target_boxes = torch.zeros(n, 4)
    fg = torch.zeros(n, dtype=torch.bool)
    if len(gt_boxes) == 0:
        return target_scores, target_boxes, fg
    inside = ((points[None] > gt_boxes[:, None, :2]) & (points[None] < gt_boxes[:, None, 2:])).all(-1)  # M, N
    ious = box_iou(gt_boxes, pred_boxes).clamp(min=0) * inside
    align = scores[:, gt_labels].T.pow(alpha) * ious.pow(beta) * inside
    k = min(topk, n)
    top = align.topk(k, dim=1).indices
    mask = torch.zeros_like(align, dtype=torch.bool).scatter_(1, top, True) & inside
    # A gt whose box holds no anchor centre (tiny boxes) still gets its nearest anchor.
    empty = ~mask.any(1)
    if empty.any():
        centres = (gt_boxes[empty, :2] + gt_boxes[empty, 2:]) / 2
        nearest = torch.cdist(centres, points).argmin(1)
        mask[empty.nonzero().squeeze(1), nearest] = True
    # An anchor claimed by several gts goes to the one it overlaps most.
    multi = mask.sum(0) > 1
    if multi.any():
        best = ious.argmax(0)
        mask[:, multi] = False
        mask[best[multi], multi.nonzero().squeeze(1)] = True
    fg = mask.any(0)
    gt_idx = mask.float().argmax(0)
    align = align * mask
    norm = (align / (align.amax(1, keepdim=True) + 1e-9)) * (ious * mask).amax(1, keepdim=True)
    weight = norm.amax(0)
    target_boxes = gt_boxes[gt_idx]
    target_scores[fg, gt_labels[gt_idx[fg]]] = weight[fg].clamp(min=0.05)
    return target_scores, target_boxes, fg


def detection_loss(feats, targets, strides, nc, size, box_gain=5.0, cls_gain=1.0):
    points, stride_t = anchor_grid(feats, strides)
    box_raw, cls_logits = flatten(feats, nc)
    pred_boxes = decode(box_raw, points, stride_t)
    scores = cls_logits.detach().sigmoid()
    t_scores, t_boxes, fgs = [], [], []
    for b, tgt in enumerate(targets):
        labels = tgt[:, 0].long()
        gt = tgt[:, 1:] * size
        ts, tb, fg = assign(scores[b], pred_boxes[b].detach(), points, labels, gt)
        t_scores.append(ts)
        t_boxes.append(tb)
        fgs.append(fg)
    t_scores = torch.stack(t_scores)
    t_boxes = torch.stack(t_boxes)
    fg = torch.stack(fgs)
    norm = max(t_scores.sum().item(), 1.0)
    cls_loss = F.binary_cross_entropy_with_logits(cls_logits, t_scores, reduction="sum") / norm
    if fg.any():
        w = t_scores.sum(-1)[fg]
        box_loss = (giou_loss(pred_boxes[fg], t_boxes[fg]) * w).sum() / norm
    else:
        box_loss = pred_boxes.sum() * 0
    return box_gain * box_loss + cls_gain * cls_loss, box_loss.detach(), cls_loss.detach()
