"""Post-training quantization of a float model to int8 for a device profile (issue 18).

`calibration` reads the samples, `ranges` observes activation ranges, `qdq` rewrites the float Relax main
into the QDQ form LowerQuantizedToInteger lowers with the int8 weight values `weight_rounding` (GPTQ) picks
against each layer's output error, `bias_correction` measures the mean error the weights' rounding adds to
each MAC's output channels (subtracted from their biases), `prepare` chains them and
measures the accuracy cost (`accuracy`) and each layer's quantization error (`layer_error`), which
`mixed_precision` reads to keep a layer float where it pays; `activation_type` takes int16 activations (16x8)
where int8's accuracy misses the budget; `decide` answers `--quantize auto`.
"""

from .accuracy import AccuracyCost, Metric
from .calibration import RANDOM, Calibration, CalibrationError, load_calibration
from .decide import Decision, decide
from .prepare import QuantizedModel, quantize_model
from .qdq import QuantizeError
from .ranges import ActivationQuant, RangeMethod

__all__ = ["AccuracyCost", "ActivationQuant", "Calibration", "CalibrationError", "Decision", "Metric",
           "QuantizeError", "QuantizedModel", "RANDOM", "RangeMethod", "decide", "load_calibration",
           "quantize_model"]
