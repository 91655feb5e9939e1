"""The batched assigner and loss against the per-image ones they replaced (the shipped models were
trained with those), and DFL's decoding against the export's.

  /usr/bin/python3 -m unittest discover -s inference/training
"""
import random
import unittest

import torch
import torch.nn.functional as F

from loss import assign, box_iou, decode, detection_loss, giou_loss
from model import Detector


def decoded(feats, reg_max=1):
    """Anchor centres, class logits and boxes (xyxy pixels), as detection_loss decodes them."""
    points, _, _, cls_logits, boxes = decode(feats, Detector.STRIDES, reg_max)
    return points, cls_logits, boxes


@torch.no_grad()
def assign_one_image(scores, pred_boxes, points, gt_labels, gt_boxes, topk=10, alpha=0.5, beta=6.0):
    """The per-image assigner of the shipped models' training, kept as the reference."""
    n, c = scores.shape
    target_scores = torch.zeros(n, c)
    target_boxes = torch.zeros(n, 4)
    fg = torch.zeros(n, dtype=torch.bool)
    if len(gt_boxes) == 0:
        return target_scores, target_boxes, fg
    inside = ((points[None] > gt_boxes[:, None, :2]) & (points[None] < gt_boxes[:, None, 2:])).all(-1)
    ious = box_iou(gt_boxes, pred_boxes).clamp(min=0) * inside
    align = scores[:, gt_labels].T.pow(alpha) * ious.pow(beta) * inside
    top = align.topk(min(topk, n), dim=1).indices
    mask = torch.zeros_like(align, dtype=torch.bool).scatter_(1, top, True) & inside
    empty = ~mask.any(1)
    if empty.any():
        centres = (gt_boxes[empty, :2] + gt_boxes[empty, 2:]) / 2
        nearest = torch.cdist(centres, points).argmin(1)
        mask[empty.nonzero().squeeze(1), nearest] = True
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


def loss_one_image_at_a_time(feats, targets, size, box_gain=5.0, cls_gain=1.0):
    points, cls_logits, pred_boxes = decoded(feats)
    scores = cls_logits.detach().sigmoid()
    assigned = [assign_one_image(scores[b], pred_boxes[b].detach(), points, t[:, 0].long(), t[:, 1:] * size) for b, t in enumerate(targets)]
    t_scores = torch.stack([a[0] for a in assigned])
    t_boxes = torch.stack([a[1] for a in assigned])
    fg = torch.stack([a[2] for a in assigned])
    norm = max(t_scores.sum().item(), 1.0)
    cls_loss = F.binary_cross_entropy_with_logits(cls_logits, t_scores, reduction="sum") / norm
    box_loss = (giou_loss(pred_boxes[fg], t_boxes[fg]) * t_scores.sum(-1)[fg]).sum() / norm
    return box_gain * box_loss + cls_gain * cls_loss


def random_targets(batch, nc, generator, with_empty=True):
    targets = []
    for i in range(batch):
        k = 0 if with_empty and i == 0 else int(torch.randint(1, 7, (1,), generator=generator))
        xy = torch.rand(k, 2, generator=generator) * 0.8
        # Some boxes tiny (no anchor centre inside), some large (anchors claimed by several).
        wh = torch.rand(k, 2, generator=generator) * torch.where(torch.rand(k, 1, generator=generator) < 0.3, 0.01, 0.5)
        boxes = torch.cat([xy, (xy + wh + 0.002).clamp(max=1)], 1)
        targets.append(torch.cat([torch.randint(0, nc, (k, 1), generator=generator).float(), boxes], 1))
    return targets


class BatchedAssigner(unittest.TestCase):
    def test_matches_the_per_image_assigner(self):
        g = torch.Generator().manual_seed(1)
        nc, size = 6, 128
        for trial in range(20):
            feats = [(torch.randn(4, 4, size // s, size // s, generator=g), torch.randn(4, nc, size // s, size // s, generator=g)) for s in Detector.STRIDES]
            points, logits, pred = decoded(feats)
            scores = logits.sigmoid()
            targets = random_targets(4, nc, g)
            m = max(len(t) for t in targets)
            labels = torch.zeros(4, m, dtype=torch.long)
            boxes = torch.zeros(4, m, 4)
            mask = torch.zeros(4, m, dtype=torch.bool)
            for i, t in enumerate(targets):
                labels[i, : len(t)], boxes[i, : len(t)], mask[i, : len(t)] = t[:, 0].long(), t[:, 1:] * size, True
            ts, tb, fg = assign(scores, pred, points, labels, boxes, mask)
            for i, t in enumerate(targets):
                ref_s, ref_b, ref_fg = assign_one_image(scores[i], pred[i], points, t[:, 0].long(), t[:, 1:] * size)
                self.assertTrue(torch.equal(fg[i], ref_fg), f"trial {trial}, image {i}: positives differ")
                self.assertTrue(torch.allclose(ts[i], ref_s, atol=1e-6), f"trial {trial}, image {i}: target scores differ")
                self.assertTrue(torch.allclose(tb[i][ref_fg], ref_b[ref_fg]), f"trial {trial}, image {i}: target boxes differ")

    def test_loss_matches_the_per_image_loss_and_its_gradient(self):
        torch.manual_seed(2)
        random.seed(2)
        net = Detector(6)
        x = torch.rand(3, 3, 128, 128)
        targets = random_targets(3, 6, torch.Generator().manual_seed(3))
        batched, _, _ = detection_loss(net(x), targets, Detector.STRIDES, 6, 128)
        batched.backward()
        grad = net.cls_heads[0][-1].weight.grad.clone()
        net.zero_grad()
        reference = loss_one_image_at_a_time(net(x), targets, 128)
        reference.backward()
        self.assertAlmostEqual(batched.item(), reference.item(), places=4)
        self.assertTrue(torch.allclose(grad, net.cls_heads[0][-1].weight.grad, atol=1e-6))


class DistributionFocalHead(unittest.TestCase):
    def test_export_decodes_boxes_as_the_loss_does(self):
        torch.manual_seed(4)
        net = Detector(6, reg_max=16).eval()
        x = torch.rand(2, 3, 128, 128)
        with torch.no_grad():
            feats = net(x)
            net.export_mode = True
            exported = net(x)
        _, _, xyxy = decoded(feats, 16)
        cxcywh = torch.cat([(xyxy[..., :2] + xyxy[..., 2:]) / 2, xyxy[..., 2:] - xyxy[..., :2]], -1)
        self.assertTrue(torch.allclose(exported[:, :4].transpose(1, 2), cxcywh, atol=1e-4))

    def test_training_steps_lower_the_loss(self):
        torch.manual_seed(5)
        net = Detector(2, width=(8, 16, 32, 48, 64), reg_max=16)
        x = torch.rand(2, 3, 128, 128)
        targets = [torch.tensor([[0, 0.2, 0.2, 0.6, 0.5]]), torch.tensor([[1, 0.5, 0.4, 0.9, 0.95], [0, 0.05, 0.6, 0.3, 0.9]])]
        opt = torch.optim.AdamW(net.parameters(), lr=3e-3)
        losses = []
        for _ in range(30):
            loss, _, _ = detection_loss(net(x), targets, Detector.STRIDES, 2, 128, reg_max=16)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        self.assertLess(losses[-1], losses[0] * 0.5, losses)


if __name__ == "__main__":
    unittest.main()
