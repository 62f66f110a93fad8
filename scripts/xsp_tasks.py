"""Wrappers that give torchvision's task models (beyond classification) the TorchScript contract XSP's LibTorch
predictor expects. Scriptable with torch 1.13.

SSDLiteDetector (ssdlite_mobilenet_v3; the C++ detection post-processing reads it):
  forward(images [N, 3, 320, 320] float32, already normalized) -> (boxes, scores):
    boxes  [N, A, 4] float32, x1, y1, x2, y2 in the input's pixels, decoded from the head's regression with the
           model's anchors (precomputed for 320x320, buffer `anchors` [A, 4]) and box coder, clipped to [0, 320];
    scores [N, A, num_classes] float32, softmax over the classes, class 0 = background.
  torchvision's GeneralizedRCNNTransform (resize + normalize: XSP's pre-processing does both) and its NMS (XSP's
  `nms` post-processing step) are left out.

Loaded by scripts/export_zoo.py (load_fixed) under the fixed file name "xsp_tasks.py": TorchScript stores each
function's file name and line numbers in the saved file (its debug info), so compiling this file from its path
would make the .pt's bytes, and the checksum in the manifest, depend on where the repository is checked out.
"""

from typing import List, Tuple

import torch
from torch import Tensor, nn


class SSDLiteDetector(nn.Module):
    def __init__(self, model: nn.Module, side: int):
        super().__init__()
        self.backbone = model.backbone
        self.head = model.head
        self.box_coder = model.box_coder
        self.side = side
        # The anchors depend only on the feature-map sizes and the image size, fixed here: compute them once with
        # the model's own anchor generator (on a zero image) and keep them as a buffer (follows .to(device/dtype)).
        from torchvision.models.detection.image_list import ImageList

        with torch.no_grad():
            x = torch.zeros(1, 3, side, side)
            features = list(self.backbone(x).values())
            anchors = model.anchor_generator(ImageList(x, [(side, side)]), features)[0]
        self.register_buffer("anchors", anchors.detach().clone())

    def forward(self, images: Tensor) -> Tuple[Tensor, Tensor]:
        if images.dim() != 4 or images.size(1) != 3 or images.size(2) != self.side or images.size(3) != self.side:
            raise ValueError("SSDLiteDetector: expected images [N, 3, side, side] (the anchors are for that size)")
        features: List[Tensor] = list(self.backbone(images).values())
        head_outputs = self.head(features)
        regression = head_outputs["bbox_regression"]  # [N, A, 4]
        n, a = regression.size(0), regression.size(1)
        boxes = self.box_coder.decode_single(regression.reshape(n * a, 4), self.anchors.repeat(n, 1))
        boxes = boxes.reshape(n, a, 4).clamp(min=0.0, max=float(self.side))
        scores = torch.softmax(head_outputs["cls_logits"], dim=-1)
        return boxes, scores


def ssdlite_detector(model: nn.Module, side: int) -> nn.Module:
    return SSDLiteDetector(model, side).eval()
