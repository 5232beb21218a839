"""``cnn``: VGG-16 last convolutional activations as local descriptors (Simonyan & Zisserman, ICLR 2015).

Every spatial cell of the ``conv5_3`` feature map (after its ReLU, before the last max-pooling) is one
512-D local descriptor, as in the FV+NN / gamma-democratic CUB-200 experiments the paper compares with.
The image (RGB) is resized to ``input_size x input_size`` (224 gives a 14 x 14 map: 196 descriptors;
``null`` keeps the image size) and normalised with the ImageNet mean and standard deviation.

Weights come from a **local file** (``weights``): a torchvision ``vgg16`` state dict (e.g.
``vgg16-397923af.pth``); nothing is downloaded. Needs torch and torchvision (optional extra
``lfabench[cnn]``); both absences give a clear error at construction.

Keypoints: ``x, y`` = the cell's centre in original image pixels, ``scale`` = the cell's stride in
original pixels (16 x image size / input size). ``max_keypoints`` keeps the cells with the largest
L2 norm (ties by y, x); null keeps all.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lfabench.sdk import Descriptor, PluginSpec, hookimpl

from .localfeatures import select_strongest

IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], np.float32)
CONV5_3_RELU = 30  # torchvision vgg16().features[:30] ends with conv5_3's ReLU


def _torch():
    try:
        import torch
        import torchvision
    except ImportError as exc:
        raise ImportError("descriptor 'cnn' needs torch and torchvision: pip install 'lfabench[cnn]'") from exc
    return torch, torchvision


class VGG16Conv(Descriptor):
    keypoint_fields = ("x", "y", "scale")
    keypoint_extent = 1.0  # scale = the cell's stride: the cell itself, not its (larger) receptive field
    selection_rule = "cells with the largest L2 activation norm first; ties by smaller y, then smaller x"
    chunk_size = 16

    def __init__(self, weights: str, input_size: int | None = 224, max_keypoints: int | None = None,
                 device: str = "cpu"):
        torch, _ = _torch()
        if not weights or not Path(weights).expanduser().is_file():
            raise FileNotFoundError(f"descriptor 'cnn': weights file {weights!r} not found; give "
                                    f"descriptor.params.weights=/path/to/vgg16-397923af.pth (a torchvision vgg16 "
                                    f"state dict; lfabench downloads nothing)")
        self.weights = str(Path(weights).expanduser().resolve())
        self.input_size = None if not input_size else int(input_size)
        self.max_keypoints = None if not max_keypoints else int(max_keypoints)
        self.device = device
        self._net = None

    def __getstate__(self):
        return dict(self.__dict__, _net=None)

    def _network(self):
        if self._net is None:
            torch, torchvision = _torch()
            model = torchvision.models.vgg16(weights=None)
            state = torch.load(self.weights, map_location="cpu", weights_only=True)
            try:
                model.load_state_dict(state)
            except RuntimeError as exc:
                raise ValueError(f"descriptor 'cnn': {self.weights} is not a torchvision vgg16 state dict ({exc})") \
                    from exc
            self._net = model.features[:CONV5_3_RELU].eval().to(self.device)
        return self._net

    def extract(self, image: np.ndarray):
        import cv2

        torch, _ = _torch()
        img = np.asarray(image)
        if img.ndim == 2:
            img = np.repeat(img[..., None], 3, axis=2)
        img = img[..., :3].astype(np.float32)
        img = img / 255.0 if img.max() > 1.0 else img
        h, w = img.shape[:2]
        if self.input_size:
            img = cv2.resize(img, (self.input_size, self.input_size), interpolation=cv2.INTER_LINEAR)
        x = torch.from_numpy(((img - IMAGENET_MEAN) / IMAGENET_STD).transpose(2, 0, 1).copy())[None]
        with torch.no_grad():
            fmap = self._network()(x.to(self.device))[0].cpu().numpy()  # (512, gh, gw)
        c, gh, gw = fmap.shape
        D = fmap.reshape(c, gh * gw).T.astype(np.float32)
        yy, xx = np.meshgrid((np.arange(gh) + 0.5) * h / gh, (np.arange(gw) + 0.5) * w / gw, indexing="ij")
        K = np.stack([xx.ravel(), yy.ravel(), np.full(gh * gw, 16.0 * w / img.shape[1])], axis=1)
        keep = select_strongest(np.linalg.norm(D, axis=1), K[:, 0], K[:, 1], self.max_keypoints)
        if not self.max_keypoints:
            keep = np.arange(len(D))
        return np.ascontiguousarray(D[keep]), K[keep].astype(np.float32)


@hookimpl
def lfabench_descriptors():
    return [PluginSpec("cnn", VGG16Conv, "VGG-16 conv5_3 activations (512-D cells), torch extra, local weights file")]
