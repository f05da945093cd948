"""TFLite Micro's micro_speech example end to end: its audio preprocessor (int8 and float output, built here as
its audio_preprocessor.py builds them: tests/audio_preprocessor_models.py) against TFLite Micro over a second
of audio, its noise estimate carried from frame to frame; and the preprocessor's bundle feeding
micro_speech_quantized.tflite's bundle in one C program, on the host and on the emulated Cortex-M4F, against
TFLite Micro running both models.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tvm")

from audio_preprocessor_models import FeatureParams, audio_preprocessor, frames_of, speech_audio  # noqa: E402
from c_checks import loops_without_constant_bounds, strict_sanitized_selftest  # noqa: E402
from conftest import models_dir  # noqa: E402
from emulator.boards import BOARDS  # noqa: E402
from emulator.qemu import run_qemu  # noqa: E402
from backends.cortex_m.bundle_files.support import BOARD_SOURCES  # noqa: E402
from stateful_bundle_driver import run_with_reset_last, tflm_invocations  # noqa: E402

KEYWORD_MODEL = "tflm/micro_speech_quantized.tflite"
PREPROCESSOR = "audio_preprocessor_int8"
KEYWORDS = "micro_speech_quantized"


def int8_preprocessor(folder: Path) -> Path:
    """The int8 preprocessor model, written into `folder` (a ModelFactory of the session's bundle cache)."""
    path = folder / f"{PREPROCESSOR}.tflite"
    path.write_bytes(audio_preprocessor(float_output=False))
    return path


def float_preprocessor(folder: Path) -> Path:
    path = folder / "audio_preprocessor_float.tflite"
    path.write_bytes(audio_preprocessor(float_output=True))
    return path


def _audio_frames() -> list[np.ndarray]:
    """One second of speech-like audio as micro_speech's 49 windows, then windows at int16's edges."""
    edges = [np.full((1, 480), value, np.int16) for value in (-32768, 32767, 0)]
    return frames_of(speech_audio(seed=5)) + edges


@pytest.mark.parametrize("factory, dtype", [(int8_preprocessor, np.int8), (float_preprocessor, np.float32)],
                         ids=["int8", "float"])
def test_preprocessor_matches_tflite_micro_frame_by_frame(compiled, factory, dtype, tmp_path: Path) -> None:
    """Every frame's 40 features bit for bit (float ones too), the spectral subtraction's noise estimate
    carried across the 52 frames, and the first frame again after `<model>_reset()`."""
    bundle = compiled(factory)
    assert bundle.selftest.passed, bundle.selftest.output
    assert bundle.plan.states(), "the noise estimate is the bundle's state"
    model = factory(tmp_path).read_bytes()
    frames = _audio_frames()
    expected = tflm_invocations(model, frames) + tflm_invocations(model, frames[:1])
    runs = run_with_reset_last(bundle.out_dir, bundle.plan.model, frames + frames[:1], (dtype,))
    for frame, (ours, theirs) in enumerate(zip(runs, expected, strict=True)):
        np.testing.assert_array_equal(ours, theirs.reshape(-1), err_msg=f"frame {frame}")
    assert len({e.tobytes() for e in expected}) > 40, "the frames' features should differ"


def test_preprocessor_bundle_builds_strict_and_passes_under_the_sanitizers(compiled, tmp_path: Path) -> None:
    """-Wall -Wextra -Wconversion -Wshadow -Werror, AddressSanitizer and UBSan over the signal helpers, and
    constant loop bounds in the kernels and the entry function."""
    bundle = compiled(int8_preprocessor)
    run = strict_sanitized_selftest(bundle.out_dir, tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert not loops_without_constant_bounds(bundle.out_dir, bundle.plan.model)


# ------------------------------------------------------------------------------------- two bundles, one program
MAIN_C = """\
/* micro_speech on one device: the audio preprocessor's bundle makes each 20 ms frame's 40 features, the
   keyword model's bundle scores the last second of them. Both bundles keep their own static arena and state. */
#include <stdio.h>
#include "{pp}.h"
#include "{kw}.h"

static const int16_t audio[{samples}] = {{{audio}}};

int main(void)
{{
  static int8_t features[{frames} * {PP}_OUTPUT0_ELEMENTS];
  int8_t scores[{KW}_OUTPUT0_ELEMENTS];
  unsigned frame, i;
  for (frame = 0u; frame < {frames}u; ++frame) {{
    if ({pp}_run(&audio[frame * {stride}u], &features[frame * {PP}_OUTPUT0_ELEMENTS]) != {PP}_OK) {{
      return 1;
    }}
  }}
  if ({kw}_run(features, scores) != {KW}_OK) {{
    return 1;
  }}
  for (i = 0u; i < sizeof features; ++i) {{
    printf("%d ", features[i]);
  }}
  printf("\\n");
  for (i = 0u; i < {KW}_OUTPUT0_ELEMENTS; ++i) {{
    printf("%d ", scores[i]);
  }}
  printf("\\n");
  return 0;
}}
"""


def _firmware(folder: Path, bundles: list[Path], audio: np.ndarray, frames: int) -> list[str]:
    """`folder` with both bundles' library sources and headers (prefixed by model: they cannot clash), the
    first bundle's Cortex-M support, and main.c; the C sources to build, main.c first."""
    folder.mkdir()
    sources = ["main.c"]
    for bundle in bundles:
        for path in bundle.iterdir():
            if path.suffix == ".h" or path.name.endswith(("_kernels.c", "_model.c", "_weights.c")):
                shutil.copy(path, folder / path.name)
                sources += [path.name] if path.suffix == ".c" else []
    if (bundles[0] / "cortex_m").is_dir():
        shutil.copytree(bundles[0] / "cortex_m", folder / "cortex_m")
    (folder / "main.c").write_text(MAIN_C.format(
        pp=PREPROCESSOR, PP=PREPROCESSOR.upper(), kw=KEYWORDS, KW=KEYWORDS.upper(), samples=audio.size,
        audio=", ".join(map(str, audio)), frames=frames, stride=FeatureParams().stride_samples))
    return sources


def _printed(text: str) -> tuple[np.ndarray, np.ndarray]:
    features, scores = (np.array(line.split(), np.int8) for line in text.splitlines()[:2])
    return features, scores


def _tflm_chain(preprocessor: bytes, audio: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TFLite Micro running both models: the preprocessor once per frame, the keyword model on all frames."""
    features = np.concatenate([f.reshape(-1) for f in tflm_invocations(preprocessor, frames_of(audio))])
    keywords = (models_dir() / KEYWORD_MODEL).read_bytes()
    return features, tflm_invocations(keywords, [features.reshape(1, -1)])[0].reshape(-1)


def _exported_symbols(library: Path) -> set[str]:
    listed = subprocess.run(["nm", "-g", "--defined-only", str(library)], check=True, capture_output=True,
                            text=True).stdout
    return {line.split()[-1] for line in listed.splitlines() if len(line.split()) == 3}


def _chain(compiled, target: str) -> tuple[list, np.ndarray]:
    """The two bundles for `target` (the keyword model's own name keeps its prefix apart) and the audio."""
    preprocessor, keywords = compiled(int8_preprocessor, target), compiled(KEYWORD_MODEL, target)
    for bundle in (preprocessor, keywords):
        assert bundle.selftest.passed, bundle.selftest.output
    return [preprocessor, keywords], speech_audio(seed=9)


def test_two_bundles_export_only_their_own_prefixed_symbols(compiled) -> None:
    """Every global symbol of each library starts with its bundle's prefix, so none is defined twice in one
    program (the signal helpers are static, `lp_`-named)."""
    bundles, _ = _chain(compiled, "lowpower")
    symbols = [_exported_symbols(bundle.library) for bundle in bundles]
    for bundle, exported in zip(bundles, symbols):
        assert exported and all(name.startswith(f"{bundle.plan.model}_") for name in exported), exported
    assert not symbols[0] & symbols[1]


def test_two_bundles_in_one_program_match_tflite_micro(compiled, tmp_path: Path) -> None:
    """Host: 49 frames through the preprocessor's bundle, their features through the keyword model's bundle,
    in one program built with the strict warnings; features and scores equal TFLite Micro's."""
    bundles, audio = _chain(compiled, "lowpower")
    sources = _firmware(tmp_path / "firmware", [b.out_dir for b in bundles], audio, len(frames_of(audio)))
    subprocess.run(["cc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Wconversion", "-Wshadow", "-Werror", "-o",
                    "chain", *sources, "-lm"], cwd=tmp_path / "firmware", check=True)
    printed = subprocess.run(["./chain"], cwd=tmp_path / "firmware", check=True, capture_output=True, text=True)
    features, scores = _printed(printed.stdout)
    expected_features, expected_scores = _tflm_chain(audio_preprocessor(), audio)
    np.testing.assert_array_equal(features, expected_features)
    np.testing.assert_array_equal(scores, expected_scores)
    assert len(set(expected_scores.tolist())) > 1, "the scores should not all be equal"


@pytest.mark.slow
def test_two_bundles_in_one_firmware_on_cortex_m4f_match_tflite_micro(compiled, tmp_path: Path) -> None:
    """The same program as cortex-m4f firmware (both bundles built by the preprocessor's cortex-m4f rules, its
    startup and linker script), run on QEMU's mps2-an386."""
    bundles, audio = _chain(compiled, "cortex-m4f")
    folder = tmp_path / "firmware"
    sources = _firmware(folder, [b.out_dir for b in bundles], audio, len(frames_of(audio)))
    sources += list(BOARD_SOURCES)
    elf = "build-cortex-m/chain.elf"
    subprocess.run(["make", "-s", "-C", str(folder), "-f", "cortex_m/qemu-test.mk", "cortex-m-elf",
                    f"CORTEX_M_SRCS={' '.join(sources)}", f"CORTEX_M_ELF={elf}"], check=True, capture_output=True)
    printed = run_qemu(folder / elf, BOARDS["mps2-an386"], timeout_s=300)
    assert printed.exit_status == 0, f"the firmware ended with {printed.ending()}: {printed.stdout}"
    features, scores = _printed(printed.stdout)
    expected_features, expected_scores = _tflm_chain(audio_preprocessor(), audio)
    np.testing.assert_array_equal(features, expected_features)
    np.testing.assert_array_equal(scores, expected_scores)
