"""report.html from small plans (packager.report_html): a row per kernel call naming its layers, measured or
estimated instructions and times, the headroom against the profile's limits, a quantized compile's layer
errors, the memory plan with an element per buffer, the operators and their support; no external reference;
every name from the model escaped."""

from __future__ import annotations

import dataclasses
import re

from html_tree import external_references, parse_html
from memory_planner import plan_memory
from memory_planner.from_plan import buffers_from_plan
from memory_planner.plan import ExecutionPlan, KernelCall, ModelOperator, OperatorSupport, Tensor, TensorRole
from backends.cortex_m.kind_targets import DSP_TARGETS
from emulator.cycle_model import CycleEstimate, cycle_estimate
from emulator.instruction_model import DESCRIPTION
from packager.report import layer_report
from packager.report_html import HtmlReport, report_html
from target import load_profile
from target.resources import FlashSource, FlashUse, Headroom, RamUse, StackSource

SCRIPT_NAME = "<script>alert(1)</script>"
ATTRIBUTE_NAME = "\"><img src=x onerror=alert(1)>"


def _plan(names: tuple[str, str, str] = ("conv", "relu", "reshape")) -> ExecutionPlan:
    """conv (128 MACs) -> relu -> reshape, int8, 16 bytes per activation; the operators named `names`."""
    tensors = {name: Tensor(name, (1, 16), "int8", role) for name, role in (
        ("x", TensorRole.INPUT), ("w", TensorRole.CONSTANT), ("h", TensorRole.INTERMEDIATE),
        ("g", TensorRole.INTERMEDIATE), ("y", TensorRole.OUTPUT))}
    calls = [KernelCall("m_conv", (names[0],), ("x", "w"), ("h",),
                        operators=(ModelOperator(names[0], "CONV_2D", 0),), macs=128),
             KernelCall("m_relu", (names[1],), ("h",), ("g",), operators=(ModelOperator(names[1], "RELU", 1),)),
             KernelCall("m_reshape", (names[2],), ("g",), ("y",), operators=(ModelOperator(names[2], "RESHAPE", 2),))]
    return ExecutionPlan("m", "m.tflite", "cortex-m4f", tensors, calls, ["x"], ["y"])


HEADROOM = Headroom(dataclasses.replace(load_profile("cortex-m4f"), memory_source="a board", sram_bytes=1000,
                                        flash_bytes=10),
                    RamUse(32, 16, 16, 0, 240, StackSource.MEASURED),
                    FlashUse(8, 6, 2, FlashSource.MEASURED))


def _page(plan: ExecutionPlan, instructions: list[int] | None, timing: CycleEstimate | None = None,
          headroom: Headroom = HEADROOM, **extra) -> str:
    buffers = buffers_from_plan(plan)
    report = layer_report(plan, instructions, sum(instructions) + 10 if instructions else None, timing=timing,
                          targets=DSP_TARGETS)
    return report_html(HtmlReport(report, buffers, plan_memory(buffers), headroom, **extra))


def _rows(text: str) -> list[str]:
    table = parse_html(text).find_id("layer-table")
    return [row.text() for body in table.iter("tbody") for row in body.iter("tr")]


def test_a_row_per_call_with_its_layers_and_measured_instructions() -> None:
    text = _page(_plan(), [256, 64, 32], timing=cycle_estimate("cortex-m4", 64_000_000))
    rows = _rows(text)
    assert len(rows) == 3
    assert all(name in row for name, row in zip(("conv #0", "relu #1", "reshape #2"), rows)), rows
    assert "256" in rows[0] and "2.0 per MAC" in rows[0] and "1.3x" in rows[0]
    root = parse_html(text)
    over = [cell.text() for cell in root.iter("td") if "over" in (cell.attrs.get("class") or "")]
    assert over == ["2.0x"]  # reshape: 32 instructions for 16 bytes written, 2x its target of 1.0
    assert "estimated time per inference" in root.find_id("layer-table").text()


def test_without_a_measurement_the_instructions_are_estimated_and_say_so() -> None:
    text = _page(_plan(), None, timing=cycle_estimate("cortex-m4", 64_000_000))
    head = [cell.text() for cell in parse_html(text).iter("th")]
    assert "est. instructions" in head and "est. us" in head and "instructions" not in head
    assert DESCRIPTION.split(":")[0] in text
    # conv: 128 MACs x 1.77 + 32 activation bytes x 6.6 = 437.76
    assert "438" in _rows(text)[0]


def test_the_headroom_shows_every_ram_part_and_a_limit_exceeded() -> None:
    root = parse_html(_page(_plan(), None))
    table = root.find_id("headroom").iter("h2")  # the heading
    assert next(table).text() == "Headroom"
    cells = " ".join(cell.text() for cell in root.iter("td"))
    assert "stack (measured)" in cells and "1,000 (696)" in cells and "10 (-6)" in cells
    full = [span for span in root.iter("span") if span.attrs.get("class") == "full"]
    assert len(full) == 1 and "width: 100.0%" in full[0].attrs["style"]  # flash: 16 B of 10
    assert "flash: weights 8 + code 6 + data 2, measured in the linked self-test" in cells


def test_a_flash_without_its_code_says_it_counts_the_weights_only() -> None:
    headroom = dataclasses.replace(HEADROOM, flash=FlashUse.weights_only(8, FlashSource.WEIGHTS_ONLY))
    cells = " ".join(cell.text() for cell in parse_html(_page(_plan(), None, headroom=headroom)).iter("td"))
    assert "flash: weights only (code not counted: not built and measured on an emulated board)" in cells


def test_the_memory_plan_has_an_element_per_buffer_and_no_namespace_url() -> None:
    plan = _plan()
    root = parse_html(_page(plan, None))
    assert [svg.attrs.get("xmlns") for svg in root.iter("svg") if svg.attrs.get("role") == "img"] == [None]
    groups = [g for g in root.iter("g") if g.attrs.get("class") == "buffer"]
    assert sorted(g.iter("title").__next__().text().split(":")[0] for g in groups) == sorted(
        b.name for b in buffers_from_plan(plan))


def test_operators_with_their_support_and_the_calls_kinds_without_them() -> None:
    given = (OperatorSupport("CONV_2D", 2, None), OperatorSupport("CUSTOM", 1, "a custom operator"))
    root = parse_html(_page(_plan(), None, operators=given))
    rows = [row.text() for row in root.find_id("operator-table").iter("tr")][1:]
    assert rows == ["CONV_2D2supported", "CUSTOM1refused: a custom operator"]
    rows = [row.text() for row in parse_html(_page(_plan(), None)).find_id("operator-table").iter("tr")][1:]
    assert rows == ["CONV_2D1supported", "RELU1supported", "RESHAPE1supported"]


def test_a_quantized_compiles_layer_errors_are_a_table_and_absent_otherwise() -> None:
    errors = ({"layer": "conv (CONV_2D)", "relative_error": 0.0123, "added_error": 0.004, "precision": "int8"},)
    root = parse_html(_page(_plan(), None, layer_errors=errors))
    assert [row.text() for row in root.find_id("layer-error-table").iter("tr")][1:] == [
        "conv (CONV_2D)1.23%0.40%int8"]
    assert 'id="quantization"' not in _page(_plan(), None)


def test_names_from_the_model_are_escaped_text_never_markup() -> None:
    text = _page(_plan((SCRIPT_NAME, ATTRIBUTE_NAME, "a&b")), [256, 64, 32])
    assert SCRIPT_NAME not in text and "<img" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    root = parse_html(text)
    assert not list(root.iter("script")) and not list(root.iter("img"))
    rows = _rows(text)
    assert SCRIPT_NAME in rows[0] and ATTRIBUTE_NAME in rows[1] and "a&b" in rows[2]
    titles = [title.text() for title in root.iter("title")]
    assert any(title.endswith(SCRIPT_NAME) for title in titles), titles  # a buffer's tooltip


def test_the_page_references_nothing_outside_itself() -> None:
    text = _page(_plan(), [256, 64, 32], timing=cycle_estimate("cortex-m4", 64_000_000))
    assert external_references(parse_html(text)) == []
    assert re.search(r"https?:|ftp:|//", text) is None  # no URL with a scheme, nor one relative to the scheme
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    # the check itself finds what it is for
    tainted = text.replace("</body>", '<img src="https://example.com/x.png"><link rel="stylesheet" href="s.css">'
                                      "</body>")
    assert len(external_references(parse_html(tainted))) == 2


def test_a_quantized_compiles_page_lists_the_float_files_operators_and_its_layer_errors(tmp_path) -> None:
    """The module compiled is made from the float file: its operators are the file's (its check's), not those of
    a Relax module given without a file."""
    import tvm_ext
    from conftest import models_dir

    bundle = tvm_ext.compile(models_dir() / "tflm/hello_world_float.tflite", out=tmp_path / "out", quantize="int8",
                             calibration="random", jobs=1)
    root = parse_html((bundle.out_dir / "report.html").read_text(encoding="utf-8"))
    assert "model check" in root.find_id("operators").text() + "".join(p.text() for p in root.iter("p"))
    assert [row.text() for row in root.find_id("operator-table").iter("tr")][1:] == ["FULLY_CONNECTED3supported"]
    assert len(_rows((bundle.out_dir / "report.html").read_text(encoding="utf-8"))) == 3
    errors = [row.text() for row in root.find_id("layer-error-table").iter("tr")][1:]
    assert len(errors) == 3 and errors[0].startswith("sequential/dense/MatMul (FULLY_CONNECTED)") and errors[0].endswith("int8"), errors
