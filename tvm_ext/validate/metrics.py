"""How close one output of the bundle is to another runtime's on the same samples, as ST's `validate` reports it:
max absolute error, RMSE, cosine similarity and, for a classifier (an output whose samples are vectors of two or
more scores), top-1 agreement, accuracy against labels and the confusion matrix."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class OutputComparison:
    """One output of the bundle against `against` (a runtime's name) over every sample, in the output's values
    (dequantized when the bundle's output is quantized and `against` is float). `top1_agreement` is None for an
    output that is not a classifier's; `accuracy` (the bundle's, against the labels) and `confusion`
    (rows: the label, columns: the bundle's class) None without labels too."""

    output: int
    against: str
    max_abs_error: float
    rmse: float
    cosine: float
    top1_agreement: float | None
    accuracy: float | None = None
    reference_accuracy: float | None = None
    confusion: np.ndarray | None = None


def is_classifier(shape: tuple[int, ...]) -> bool:
    """An output of one vector of two or more scores per sample (its other dimensions 1)."""
    return len(shape) >= 1 and shape[-1] >= 2 and int(np.prod(shape)) == shape[-1]


def compare(output: int, against: str, ours: list[np.ndarray], theirs: list[np.ndarray],
            labels: np.ndarray | None) -> OutputComparison:
    """`ours` (the bundle's values of output `output`, one array per sample) against `theirs`."""
    a = np.stack([np.asarray(x, np.float64).reshape(-1) for x in ours])
    b = np.stack([np.asarray(x, np.float64).reshape(-1) for x in theirs])
    difference = a - b
    norms = np.linalg.norm(a) * np.linalg.norm(b)
    cosine = float(np.sum(a * b) / norms) if norms else float(np.array_equal(a, b))
    top1 = accuracy = reference_accuracy = confusion = None
    if is_classifier(np.shape(ours[0])):
        ours_class, theirs_class = a.argmax(axis=1), b.argmax(axis=1)
        top1 = float(np.mean(ours_class == theirs_class))
        if labels is not None:
            accuracy = float(np.mean(ours_class == labels))
            reference_accuracy = float(np.mean(theirs_class == labels))
            classes = a.shape[1]
            confusion = np.zeros((classes, classes), np.int64)
            for label, predicted in zip(labels, ours_class):
                if 0 <= label < classes:
                    confusion[label, predicted] += 1
    return OutputComparison(output, against, float(np.max(np.abs(difference))),
                            float(np.sqrt(np.mean(difference ** 2))), cosine, top1, accuracy, reference_accuracy,
                            confusion)
