"""The accuracy cost of quantization: the int8 model's outputs (dequantized) against the float model's on
the same samples, under the metric that suits the model."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np


class Metric(enum.Enum):
    """TOP1_AGREEMENT (classifiers: the model ends in a softmax): the share of samples whose largest output
    is the same element in both models. RELATIVE_ERROR (everything else, regressors and autoencoders):
    ||int8 - float||_2 / ||float||_2 over all outputs of all samples."""

    TOP1_AGREEMENT = "top1_agreement"
    RELATIVE_ERROR = "relative_error"


CLASSIFIER_LAYERS = frozenset({"SOFTMAX", "Softmax"})


def metric_for(last_layer_kind: str) -> Metric:
    return Metric.TOP1_AGREEMENT if last_layer_kind in CLASSIFIER_LAYERS else Metric.RELATIVE_ERROR


@dataclass(frozen=True)
class AccuracyCost:
    """One metric's value over `samples` samples (its first output only when a model has several).
    `float_classes` (TOP1_AGREEMENT only): how many distinct classes the float model's top-1 takes on those
    samples; 1 says the agreement is uninformative (e.g. noise inputs all landing in one class).
    `float_class_counts` (TOP1_AGREEMENT only): how many samples the float model puts in each class, by index."""

    metric: Metric
    value: float
    samples: int
    float_classes: int | None = None
    float_class_counts: tuple[int, ...] | None = None

    def facts(self) -> dict:
        classes = {} if self.float_classes is None else {"float_classes": self.float_classes,
                                                         "float_class_counts": list(self.float_class_counts or ())}
        return {"metric": self.metric.value, "value": self.value, "samples": self.samples, **classes}

    def describe(self) -> str:
        if self.metric is Metric.TOP1_AGREEMENT:
            return (f"top-1 agreement {100 * self.value:.1f}% on {self.samples} samples "
                    f"(float predicts {self.float_classes} classes)")
        return f"relative error {100 * self.value:.2f}% on {self.samples} samples"


def accuracy_cost(metric: Metric, float_outputs: list[np.ndarray], int8_outputs: list[np.ndarray]) -> AccuracyCost:
    """`metric` over paired outputs (one array per sample: the float model's, the int8 model's dequantized)."""
    reference = np.stack([np.asarray(o, np.float64).reshape(-1) for o in float_outputs])
    quantized = np.stack([np.asarray(o, np.float64).reshape(-1) for o in int8_outputs])
    if metric is Metric.TOP1_AGREEMENT:
        classes = reference.argmax(axis=1)
        value = float(np.mean(classes == quantized.argmax(axis=1)))
        counts = tuple(int(count) for count in np.bincount(classes, minlength=reference.shape[1]))
        return AccuracyCost(metric, value, len(float_outputs), len(np.unique(classes)), counts)
    norm = float(np.linalg.norm(reference))
    value = float(np.linalg.norm(quantized - reference) / norm) if norm > 0 else float(
        np.linalg.norm(quantized - reference))
    return AccuracyCost(metric, value, len(float_outputs))
