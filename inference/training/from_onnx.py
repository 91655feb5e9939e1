"""Turns a shipped ONNX export of the project's Detector back into a checkpoint (best.pt) that
train.py can continue from (--init), for when the training run's own checkpoint is gone: only the
ONNX file is kept in the repository.

torch.onnx.export folds each BatchNorm into the convolution before it, so the ONNX file holds one
weight and one bias per convolution. They are loaded into the convolutions in the order the network
runs them, and each BatchNorm is set to the identity (mean 0, variance 1 - eps, scale 1) with the
folded bias as its shift: in eval mode the network computes exactly what the ONNX file does. Train
on from it with --freeze-bn, so the batch statistics of small CPU batches do not replace these.

  /usr/bin/python3 -m venv --system-site-packages runs/venv && runs/venv/bin/pip install onnxruntime
  runs/venv/bin/python inference/training/from_onnx.py inference/models/damage/model.onnx runs/from-onnx/best.pt
"""
import ast
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

from model import Conv, Detector


def convs_in_run_order(model, size):
    """The Conv2d modules in the order a forward pass runs them, each with its Conv wrapper (or None)."""
    order = []
    hooks = [m.register_forward_hook(lambda mod, i, o: order.append(mod)) for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    model.eval()
    with torch.no_grad():
        model(torch.zeros(1, 3, size, size))
    for h in hooks:
        h.remove()
    wrapper = {m.conv: m for m in model.modules() if isinstance(m, Conv)}
    return [(c, wrapper.get(c)) for c in order]


def main(onnx_path, out_path):
    m = onnx.load(onnx_path)
    meta = {p.key: p.value for p in m.metadata_props}
    names = [n for _, n in sorted(ast.literal_eval(meta["names"]).items())]
    size = ast.literal_eval(meta["imgsz"])[0]
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    onnx_convs = [n for n in m.graph.node if n.op_type == "Conv"]
    model = Detector(len(names))
    torch_convs = convs_in_run_order(model, size)
    if len(onnx_convs) != len(torch_convs):
        sys.exit(f"{onnx_path} has {len(onnx_convs)} convolutions; the Detector has {len(torch_convs)}")
    with torch.no_grad():
        for node, (conv, wrapper) in zip(onnx_convs, torch_convs):
            weight = inits[node.input[1]]
            bias = inits[node.input[2]] if len(node.input) > 2 else np.zeros(weight.shape[0], np.float32)
            if tuple(weight.shape) != tuple(conv.weight.shape):
                sys.exit(f"shape mismatch at {node.name}: {weight.shape} against {tuple(conv.weight.shape)}")
            conv.weight.copy_(torch.from_numpy(weight))
            if wrapper is None:
                conv.bias.copy_(torch.from_numpy(bias))
            else:
                bn = wrapper.bn
                bn.weight.fill_(1.0)
                bn.bias.copy_(torch.from_numpy(bias))
                bn.running_mean.zero_()
                bn.running_var.fill_(1.0 - bn.eps)
    # The check that matters: the same outputs as the ONNX file. Debian's onnx has no runtime; PyPI's
    # onnxruntime does (a venv made with --system-site-packages keeps Debian's torch beside it).
    import onnxruntime  # noqa: E402

    x = torch.rand(2, 3, size, size)
    model.eval()
    model.export_mode = True
    with torch.no_grad():
        ours = model(x).numpy()
    theirs = onnxruntime.InferenceSession(onnx_path, providers=["CPUExecutionProvider"]).run(None, {m.graph.input[0].name: x.numpy()})[0]
    diff = float(np.abs(ours - theirs).max())
    print(f"max difference from the ONNX file's output: {diff:.2e}")
    if diff > 1e-3:
        sys.exit("the rebuilt network does not match the ONNX file")
    model.export_mode = False
    torch.save({"state_dict": model.state_dict(), "names": names, "size": size, "epoch": 0, "from_onnx": onnx_path}, out_path)
    print(f"wrote {out_path}: {len(names)} classes {names}, {size} px")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
