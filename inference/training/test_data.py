"""Augmentations and tiles: the boxes they return still frame what they framed.

  /usr/bin/python3 -m unittest discover -s inference/training
"""
import json
import os
import random
import tempfile
import unittest

import torch
from PIL import Image

from data import augment, hue_turn, mosaic, pasted_whole_cars, repeated_by_class, tile_regions, tiles

SIZE = 96
COLOURS = [(250, 30, 30), (30, 250, 30), (30, 30, 250), (250, 250, 30)]


def photo_with_box(colour, box):
    """A grey square image with one box painted in `colour`, and that box as its target."""
    img = torch.full((3, SIZE, SIZE), 114, dtype=torch.uint8)
    x1, y1, x2, y2 = (round(v * SIZE) for v in box)
    img[:, y1:y2, x1:x2] = torch.tensor(colour, dtype=torch.uint8)[:, None, None]
    return img, torch.tensor([[COLOURS.index(colour), *box]])


def mean_colour(canvas, box):
    x1, y1, x2, y2 = (int(v * canvas.shape[-1]) for v in box)
    # The inner half, clear of the edges a bilinear scaling blurs.
    dx, dy = (x2 - x1) // 4, (y2 - y1) // 4
    return canvas[:, y1 + dy:y2 - dy, x1 + dx:x2 - dx].reshape(3, -1).mean(1)


class Mosaic(unittest.TestCase):
    def test_each_box_frames_its_own_colour(self):
        random.seed(0)
        images, targets = [], []
        for colour in COLOURS:
            img, t = photo_with_box(colour, [0.3, 0.3, 0.7, 0.7])
            images.append(img)
            targets.append(t)
        seen = 0
        for _ in range(40):
            canvas, boxes = mosaic(images, targets, [0, 1, 2, 3], SIZE, (0.5, 1.5))
            self.assertEqual(tuple(canvas.shape), (3, SIZE, SIZE))
            for c, *box in boxes.tolist():
                if min(box[2] - box[0], box[3] - box[1]) * SIZE < 8:
                    continue
                expected = torch.tensor(COLOURS[int(c)], dtype=torch.float32)
                self.assertLess((mean_colour(canvas, box) - expected).abs().max().item(), 25, (c, box))
                seen += 1
        self.assertGreater(seen, 40)


class Zoom(unittest.TestCase):
    def test_boxes_follow_the_zoom_and_the_flip(self):
        random.seed(1)
        img, t = photo_with_box(COLOURS[2], [0.1, 0.5, 0.4, 0.9])
        for _ in range(30):
            canvas, boxes = augment(img, t, SIZE, scale=(0.5, 1.5))
            for c, *box in boxes.tolist():
                if min(box[2] - box[0], box[3] - box[1]) * SIZE < 8:
                    continue
                # Colour jitter moves the colour; blue stays the strongest channel.
                colour = mean_colour(canvas, box)
                self.assertEqual(int(colour.argmax()), 2, box)


class Hue(unittest.TestCase):
    def test_turns_hue_and_keeps_brightness(self):
        canvas = torch.tensor(COLOURS, dtype=torch.float32).T[:, :, None]  # 3, 4, 1
        luma = torch.tensor([0.299, 0.587, 0.114])
        turned = hue_turn(canvas, 0.1)
        self.assertTrue(torch.allclose((luma[:, None, None] * turned).sum(0), (luma[:, None, None] * canvas).sum(0), atol=1e-3))
        self.assertGreater((turned - canvas).abs().max().item(), 20)
        self.assertTrue(torch.allclose(hue_turn(canvas, 1.0), canvas, atol=1e-3))


class Tiles(unittest.TestCase):
    def test_regions_match_the_products_tiles(self):
        # inference/detection/tiles.ts's tileRegions(640, 640, 2) and (512, 384, 3), first four.
        self.assertEqual(tile_regions(640, 640, 2), [(0, 0, 356, 356), (284, 0, 356, 356), (0, 284, 356, 356), (284, 284, 356, 356)])
        self.assertEqual(tile_regions(512, 384, 3)[:4], [(0, 0, 197, 148), (158, 0, 197, 148), (315, 0, 197, 148), (0, 118, 197, 148)])

    def test_boxes_land_in_the_tiles_that_show_them(self):
        photo = Image.new("RGB", (640, 640), (114, 114, 114))
        corner, centre = [0.1, 0.1, 0.2, 0.2], [0.45, 0.45, 0.55, 0.55]
        photo.paste((250, 30, 30), tuple(round(v * 640) for v in corner))
        found = tiles(photo, [[0, *corner], [1, *centre]], 2, 384)
        self.assertEqual([len(b) for _, b in found], [2, 1, 1, 1])
        canvas, boxes = found[0]
        red = next(b for b in boxes.tolist() if b[0] == 0)
        self.assertGreater(mean_colour(canvas.float(), red[1:])[0].item(), 200)
        # 0.1 of 640 px is 64 px, at 384 / 356 in the tile's square.
        self.assertAlmostEqual(red[1], 64 * 384 / 356 / 384, places=4)


class CopyPaste(unittest.TestCase):
    def test_damage_lands_on_its_part_with_its_box(self):
        names = ["crack", "dent", "glass shatter", "lamp broken", "scratch", "tire flat"]
        with tempfile.TemporaryDirectory() as root:
            os.mkdir(os.path.join(root, "JPEGImages"))
            Image.new("RGB", (200, 100), (60, 60, 200)).save(os.path.join(root, "JPEGImages", "car.png"))
            door = [100, 20, 180, 20, 180, 80, 100, 80]
            json.dump({
                "categories": [{"id": 1, "name": "front_left_door"}, {"id": 2, "name": "wheel"}],
                "images": [{"id": 1, "file_name": "car.png", "width": 200, "height": 100}],
                "annotations": [
                    {"image_id": 1, "category_id": 1, "bbox": [100, 20, 80, 60], "segmentation": [door]},
                    {"image_id": 1, "category_id": 2, "bbox": [10, 60, 30, 30], "segmentation": [[10, 60, 40, 60, 40, 90, 10, 90]]},
                ],
            }, open(os.path.join(root, "annotations.json"), "w"))
            # A dent with a texture (a bright stripe on dark), and a flat tyre, which is never pasted.
            crop = Image.new("RGB", (40, 40), (20, 20, 20))
            crop.paste((240, 240, 240), (0, 15, 40, 25))
            mask = Image.new("L", (40, 40), 255)
            segments = [(crop, mask, 1), (crop, mask, 5)]
            images, targets = pasted_whole_cars(root, segments, names, 200, per_photo=(2, 2), repeat=20, rng=random.Random(3))
        self.assertEqual(len(images), 20)
        boxes = torch.cat(targets)
        self.assertEqual(set(boxes[:, 0].tolist()), {1.0})
        # Letterboxed 200 x 100 into 200 x 200: the door spans x 100-180, y 70-130 of the square.
        px = boxes[:, 1:] * 200
        self.assertTrue(bool((px[:, 0] >= 99).all() and (px[:, 2] <= 181).all() and (px[:, 1] >= 69).all() and (px[:, 3] <= 131).all()), px)
        for img, t in zip(images, targets):
            for _, x1, y1, x2, y2 in t.tolist():
                region = img[:, int(y1 * 200):int(y2 * 200), int(x1 * 200):int(x2 * 200)].float()
                # The stripe's contrast survives on the panel's colour.
                self.assertGreater(region.max() - region.min(), 100)



class RepeatedByClass(unittest.TestCase):
    def test_images_of_a_repeated_class_come_back_n_times_in_all(self):
        crack = torch.tensor([[0, 0.1, 0.1, 0.2, 0.2]])
        dent = torch.tensor([[1, 0.1, 0.1, 0.2, 0.2]])
        both = torch.cat([crack, dent])
        none = torch.zeros(0, 5)
        images = ["crack", "dent", "both", "none"]
        extra_images, extra_targets = repeated_by_class(images, [crack, dent, both, none], {0: 3, 1: 2})
        # crack twice more, dent once more, both twice more (the larger N), the empty one not at all
        self.assertEqual(sorted(extra_images), ["both", "both", "crack", "crack", "dent"])
        self.assertEqual(len(extra_targets), 5)
        # each image comes back with its own boxes
        targets_of = {"crack": crack, "dent": dent, "both": both}
        for img, tgt in zip(extra_images, extra_targets):
            self.assertTrue(torch.equal(tgt, targets_of[img]))
        self.assertEqual(repeated_by_class(images, [crack, dent, both, none], {}), ([], []))


if __name__ == "__main__":
    unittest.main()
