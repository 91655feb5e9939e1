"""The whole-photo judgement's training pieces (train_judge.py, model.py: PhotoJudge): what it
outputs and exports, where its cell targets fall, and that its crops and formats keep each box on
what it framed.

  bash inference/training/test.sh
"""
import random
import unittest

import torch
from PIL import Image

from model import PhotoJudge
from data import _letterbox
from train_judge import Sample, cell_targets, crop, loss_of, reencode

SIZE = 128


class PhotoJudgeTest(unittest.TestCase):
    def test_outputs_a_photo_score_row_and_a_cell_map_and_exports_probabilities(self):
        torch.manual_seed(0)
        net = PhotoJudge(SIZE, pretrained=False).eval()
        photo, cells = net(torch.rand(2, 3, SIZE, SIZE))
        self.assertEqual(tuple(photo.shape), (2, len(PhotoJudge.SCORES)))
        self.assertEqual(tuple(cells.shape), (2, len(PhotoJudge.CELLS), SIZE // 32, SIZE // 32))
        net.export_mode = True
        scores, maps = net(torch.rand(2, 3, SIZE, SIZE))
        self.assertTrue(torch.all((scores >= 0) & (scores <= 1)))
        self.assertTrue(torch.allclose(scores[:, 2:].sum(1), torch.ones(2)))
        self.assertTrue(torch.all((maps >= 0) & (maps <= 1)))

    def test_loss_leaves_out_what_a_source_does_not_label(self):
        torch.manual_seed(0)
        photo = torch.randn(2, 5, requires_grad=True)
        cells = torch.randn(2, 2, 4, 4)
        unknown = torch.tensor([[1.0, -1, -1], [0, -1, -1]])
        loss_of(photo, cells, unknown, torch.zeros(2, 2, 4, 4)).backward()
        # Broken part and severity unknown: no gradient reaches their outputs.
        self.assertTrue(torch.all(photo.grad[:, 1:] == 0))
        self.assertTrue(torch.all(photo.grad[:, 0] != 0))


class TargetsTest(unittest.TestCase):
    def test_cells_under_a_box_are_damage_and_a_broken_box_is_broken(self):
        img = Image.new("RGB", (256, 128))
        _, to_square = _letterbox(img, SIZE)  # scale 0.5, padded 32 px above and below
        t = cell_targets([(0, 0, 100, 40, True), (200, 100, 210, 110, False)], to_square, SIZE // 32, known_broken=True)
        # The first box is (0, 32)-(50, 52) in the square: row 1, columns 0 and 1. The second is
        # (100, 82)-(105, 87): the one cell holding it, row 2, column 3.
        self.assertEqual(t[0].sum().item(), 3)
        self.assertEqual(t[1].sum().item(), 2)
        self.assertEqual(t[0, 1, 0].item() + t[0, 1, 1].item() + t[0, 2, 3].item(), 3)
        self.assertTrue(torch.all(cell_targets([], to_square, 4, known_broken=False)[1] == -1))

    def test_a_damaged_crop_keeps_a_box_and_a_format_change_moves_boxes_with_the_photo(self):
        img = Image.new("RGB", (400, 300))
        sample = Sample(img, 1, 0, 0, [(300, 200, 340, 240, False)], "x")
        for seed in range(20):
            piece, boxes = crop(sample, random.Random(seed))
            self.assertEqual(len(boxes), 1)
            x1, y1, x2, y2, _ = boxes[0]
            self.assertTrue(0 <= x1 < x2 <= piece.width + 1 and 0 <= y1 < y2 <= piece.height + 1)
        other, (sx, sy) = reencode(img, random.Random(1))
        self.assertAlmostEqual(other.width / img.width, sx)
        self.assertAlmostEqual(other.height / img.height, sy)


if __name__ == "__main__":
    unittest.main()
