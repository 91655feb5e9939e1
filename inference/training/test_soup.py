"""soup.py: the mean of fine-tuned checkpoints' weights.

  bash inference/training/test.sh
"""
import unittest

import torch

from model import Detector
from soup import soup


def checkpoint(seed, **meta):
    torch.manual_seed(seed)
    return {"state_dict": Detector(6, size=64).state_dict(), "names": ["a"] * 6, "width": None, "epoch": 9, **meta}


class SoupTest(unittest.TestCase):
    def test_averages_the_weights_and_keeps_the_rest_of_the_first(self):
        a, b = checkpoint(1, size=512), checkpoint(2, size=640)
        mean = soup([a, b])
        weights = [k for k, v in a["state_dict"].items() if v.is_floating_point()]
        counts = [k for k, v in a["state_dict"].items() if not v.is_floating_point()]
        self.assertTrue(weights and counts)
        for k in weights:
            self.assertTrue(torch.allclose(mean["state_dict"][k], (a["state_dict"][k] + b["state_dict"][k]) / 2))
        self.assertFalse(torch.equal(mean["state_dict"][weights[0]], a["state_dict"][weights[0]]))
        for k in counts:
            self.assertTrue(torch.equal(mean["state_dict"][k], a["state_dict"][k]))
        self.assertEqual((mean["size"], mean["epoch"]), (512, 0))
        # The mean is a model: it loads into the network.
        Detector(6, size=64).load_state_dict(mean["state_dict"])

    def test_refuses_checkpoints_of_different_classes_or_networks(self):
        with self.assertRaises(ValueError):
            soup([checkpoint(1), checkpoint(2, names=["b"] * 6)])
        torch.manual_seed(3)
        wider = {"state_dict": Detector(6, width=(16, 32, 64, 96, 192), size=64).state_dict(), "names": ["a"] * 6, "width": None}
        with self.assertRaises(ValueError):
            soup([checkpoint(1), wider])


if __name__ == "__main__":
    unittest.main()
