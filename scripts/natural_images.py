"""Image samples from natural photographs, for calibrating and judging the quantized image classifiers
(not a test; scripts/bench_quantize.py uses it).

The photographs are the ones scikit-image ships inside its wheel (`skimage.data`, read without network:
a person - astronaut, cameraman, 200 faces of LFW -, a cat, coffee, a rocket, a horse, coins, a clock, a
retina, the Hubble deep field, textures, text): the only natural images a package registry gives us.
Each sample is a random crop (a side of 30-100 % of the photo's shorter side, aspect 3:4 to 4:3), flipped
left-right half of the time, resized to the model's input, rounded to whole 8-bit pixels (what a camera
delivers, and what both models were trained on: CIFAR-10's and the VWW set's 8-bit images; their int8 twins
take exactly those values) and scaled to the pixel range the model was trained on. Two seeds give two
disjoint draws of the same distribution: the calibration set and the held-back set.

    pip install 'tvm_ext[bench]'   # scikit-image
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# The photographs of skimage.data that ship in the wheel (lfw_subset: 200 grey 25x25 faces, one photo each).
PHOTOS = ("astronaut", "camera", "chelsea", "coffee", "rocket", "horse", "coins", "clock", "retina",
          "hubble_deep_field", "immunohistochemistry", "grass", "gravel", "brick", "moon", "page", "text",
          "logo", "lfw_subset")
SMALLEST_CROP = 0.3  # of the photo's shorter side
CALIBRATION_SEED, HELD_BACK_SEED = 1, 2


@dataclass(frozen=True)
class PixelRange:
    """The float input range a model was trained on: pixel p in [0, 255] -> p * scale. Read from the
    model's int8 twin, whose input quantization covers exactly that range (pretrainedResnet_quant: scale 1,
    zero point -128 -> [0, 255]; vww_96_int8: scale 1/255, zero point -128 -> [0, 1])."""

    scale: float


PIXEL_RANGES = {"pretrainedResnet": PixelRange(1.0), "vww_96_float": PixelRange(1.0 / 255.0)}


def photographs() -> list[np.ndarray]:
    """Every photograph as float RGB in [0, 255], (H, W, 3)."""
    from skimage import data

    photos = []
    for name in PHOTOS:
        image = np.asarray(getattr(data, name)())
        stack = image if name == "lfw_subset" else image[None]
        for photo in stack:
            photos.append(_rgb_255(photo))
    return photos


def _rgb_255(photo: np.ndarray) -> np.ndarray:
    if photo.dtype == bool:
        photo = photo.astype(np.float64) * 255.0
    elif photo.dtype.kind == "f":
        photo = photo * (255.0 if photo.max() <= 1.0 else 1.0)
    photo = photo.astype(np.float64)
    if photo.ndim == 2:
        photo = np.repeat(photo[..., None], 3, axis=2)
    return photo[..., :3]  # logo is RGBA


def draw(photos: list[np.ndarray], count: int, shape: tuple[int, int], pixels: PixelRange,
         seed: int) -> np.ndarray:
    """`count` samples (count, H, W, 3) float32 of random crops of `photos` resized to `shape` (H, W). The
    faces of lfw_subset count as one photograph, so they are drawn as often as the astronaut."""
    from skimage.transform import resize

    rng = np.random.default_rng(seed)
    faces = [p for p in photos if p.shape[:2] == (25, 25)]
    others = [p for p in photos if p.shape[:2] != (25, 25)]
    samples = np.empty((count, *shape, 3), np.float32)
    for index in range(count):
        pick = int(rng.integers(len(others) + 1))
        photo = faces[int(rng.integers(len(faces)))] if pick == len(others) else others[pick]
        height, width = photo.shape[:2]
        side = rng.uniform(SMALLEST_CROP, 1.0) * min(height, width)
        aspect = rng.uniform(0.75, 4.0 / 3.0)
        crop_h, crop_w = max(1, min(height, int(side * aspect))), max(1, min(width, int(side / aspect)))
        top, left = int(rng.integers(height - crop_h + 1)), int(rng.integers(width - crop_w + 1))
        crop = photo[top:top + crop_h, left:left + crop_w]
        if rng.random() < 0.5:
            crop = crop[:, ::-1]
        resized = resize(crop, shape, order=1, anti_aliasing=True, preserve_range=True)
        samples[index] = np.rint(np.clip(resized, 0.0, 255.0)) * pixels.scale
    return samples
