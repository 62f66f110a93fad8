#!/usr/bin/env python3
"""Writes ZOO/resnet18_sync.pt and its manifest: ResNet-18 whose forward reads a value on the host (bool(tensor),
aten::is_nonzero), which a CUDA graph cannot capture. `xsp evaluate resnet18_sync --cuda-graphs` must refuse it,
naming the op (docs/cuda-graphs.md). Usage: python3 sync_model.py ZOO (after export_zoo.py --models resnet18)."""
import hashlib
import re
import sys

import torch


class Sync(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        y = self.inner(x)
        if bool(y.mean() > 1e9):  # a host synchronization
            y = y * 0
        return y


def main():
    zoo = sys.argv[1]
    torch.jit.script(Sync(torch.jit.load(f"{zoo}/resnet18.pt"))).save(f"{zoo}/resnet18_sync.pt")
    digest = hashlib.sha256(open(f"{zoo}/resnet18_sync.pt", "rb").read()).hexdigest()
    text = open(f"{zoo}/resnet18.yaml").read().replace("resnet18.pt", "resnet18_sync.pt")
    text = re.sub(r"sha256:[0-9a-f]{64}", "sha256:" + digest, text, count=1)
    text = re.sub(r"^name: .*$", "name: ResNet18Sync", text, count=1, flags=re.M)  # names are unique in a zoo
    open(f"{zoo}/resnet18_sync.yaml", "w").write(text)
    print("wrote", f"{zoo}/resnet18_sync.yaml")


if __name__ == "__main__":
    main()
