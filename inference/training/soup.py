"""A "model soup" (Wortsman et al. 2022): the mean of several checkpoints' weights, where every one
was fine-tuned from one checkpoint (same network, same frozen BatchNorm statistics), so their
weights lie in one basin and their mean is a model, often better than each. The close-up model is
the mean of two runs from one start, one at 512 px and one at 640 px (its model card). Integer
tensors (BatchNorm's batch counts) are taken from the first checkpoint; so is everything but the
weights. Export the result with `train.py --init SOUP --epochs 0 --size N --out DIR`.

  python inference/training/soup.py OUT.pt A/best.pt B/best.pt [...]
"""
import sys

import torch


def soup(checkpoints):
    """The first checkpoint with its floating-point weights replaced by all checkpoints' mean."""
    first = checkpoints[0]
    keys = first["state_dict"].keys()
    for other in checkpoints[1:]:
        same = other["state_dict"].keys() == keys and all(other["state_dict"][k].shape == first["state_dict"][k].shape for k in keys)
        if not same or any(other.get(m) != first.get(m) for m in ("names", "width", "reg_max", "backbone")):
            raise ValueError("checkpoints of different networks or classes cannot be averaged")
    state = {
        k: (sum(c["state_dict"][k].float() for c in checkpoints) / len(checkpoints)).to(v.dtype) if v.is_floating_point() else v
        for k, v in first["state_dict"].items()
    }
    return {**first, "state_dict": state, "epoch": 0, "metrics": {}}


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit("usage: soup.py OUT.pt A.pt B.pt [...]")
    out, paths = sys.argv[1], sys.argv[2:]
    torch.save(soup([torch.load(p, map_location="cpu") for p in paths]), out)
    print(f"{out}: the mean of {len(paths)} checkpoints' weights")
