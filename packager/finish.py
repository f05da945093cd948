"""The last step of a bundle, once it is built and self-tested: its manifest, the archive, no leftovers."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from emulator.cycle_model import CycleEstimate
from memory_planner.plan import ExecutionPlan, OperatorSupport
from packager import region_arenas
from packager.archive import archive
from packager.bundle import BundleInputs, bundle_io
from packager.bundle_readme import README_FILE, ReadmeFacts, bundle_readme
from packager.kernel_kinds import KernelKind
from packager.manifest import manifest, manifest_json
from packager.markdown_text import markdown_text
from packager.report import REPORT_FILE, LayerReport, layer_report
from packager.report_html import REPORT_HTML_FILE, HtmlReport, report_html
from packager.selftest_verdict import SelftestResult
from target.resources import Headroom, StackSource

HOST_SELFTEST_PROGRAM = "selftest"
"""The self-test program the bundle's Makefile links on the host (`make selftest`)."""


@dataclass(frozen=True)
class BundleFacts:
    """What the manifest records beyond the plan and the memory plan, all known once the self-test ran.

    `tools` maps each tool to its version; `profile` and `headroom` describe the target profile and how much
    of its SRAM and flash (bytes) the bundle leaves; `selftest` is the self-test's verdict, None when the
    bundle was not built (`untested` then says why); `measured` holds the emulated board's measurements
    ({} when the self-test ran on the host or not at all), recorded under the runner's `manifest_key`.
    """

    tools: dict[str, str]
    profile: dict[str, Any]
    headroom: Headroom
    selftest: SelftestResult | None
    measured: dict[str, Any]
    quantization: dict[str, Any] | None = None  # how a float model was quantized (tvm_ext.compile.quantized)
    subgraph_units: tuple[dict[str, Any], ...] = ()  # each subgraph's compute unit and score (tvm_ext.plan.unit_assignment)
    # each subgraph's data layout and estimates (tvm_ext.transform.layout_per_subgraph; its subgraphs are those
    # of the imported model, before the passes)
    subgraph_layouts: tuple[dict[str, Any], ...] = ()
    untested: str | None = None  # why the bundle was neither built nor self-tested (None: it was)
    timing: CycleEstimate | None = None  # the core's cycle estimate for report.md's times (None: none)
    # instructions per unit of each kernel kind on the profile's core (backends.backend.Backend.kind_targets;
    # None: no targets)
    kind_targets: Mapping[KernelKind, float] | None = None
    operators: tuple[OperatorSupport, ...] = ()  # the model file's operator kinds (empty: a Relax module)
    # the patch plan the bundle runs (tvm_ext.compile.patches.PatchFacts.manifest_entry; None: layer by layer)
    patches: dict[str, Any] | None = None
    # the kernels in their forms with less scratch (tvm_ext.compile.scratch_forms.ScratchChoice.manifest_entry; None:
    # every kernel keeps its scratch)
    scratch_forms: dict[str, Any] | None = None

    def layer_report(self, bundle: BundleInputs) -> LayerReport:
        """The per-call report of `bundle` with the self-test's instruction counts (report.md's facts)."""
        if self.selftest is None:  # the estimated instructions' times (report.html) still apply
            return layer_report(bundle.plan, None, None, self.untested, self.timing)
        runner = bundle.config.emulated
        return layer_report(bundle.plan, self.selftest.call_instructions, self.selftest.instructions,
                            timing=self.timing, targets=self.kind_targets,
                            profiled_sources=runner.profiled_model_source("*") if runner is not None else None)

    def _selftest_verdict(self) -> dict[str, Any]:
        """The manifest's self-test verdict: passed, where, each output's errors; or untested and why."""
        if self.selftest is None:
            return {"passed": None, "untested": self.untested}
        return {"passed": self.selftest.passed, "where": self.selftest.where,
                "max_abs_errors": list(self.selftest.max_errors),
                "outputs": [report.facts() for report in self.selftest.reports]}

    def manifest_entries(self, bundle: BundleInputs, report: LayerReport) -> dict[str, Any]:
        """The manifest's entries for these facts and `report` (`layer_report(bundle)`, which report.md shows
        too), in the manifest's order; the self-test's tolerances and cases are those `bundle.vectors` embedded
        in selftest.c (`selftest.outputs`: one entry per case and output; `max_abs_errors`: per output, the
        largest over the cases)."""
        vectors = bundle.vectors
        entries: dict[str, Any] = {
            "layer_report": report.facts(),
            "subgraph_units": list(self.subgraph_units),
            "subgraph_layouts": list(self.subgraph_layouts),
            "tools": self.tools,
            "selftest": {
                "reference": vectors.reference, "rtol": vectors.rtol, "atol_lsb": vectors.atol_lsb,
                "cases": len(vectors.cases), **self._selftest_verdict(),
            },
            "profile": self.profile,
            "headroom": self.headroom.manifest_entry(),
        }
        if self.measured:
            entries[bundle.config.emulated.manifest_key] = self.measured
        if self.quantization is not None:
            entries["quantization"] = self.quantization
        if self.patches is not None:
            entries["patches"] = self.patches
        if self.scratch_forms is not None:
            entries["scratch_forms"] = self.scratch_forms
        if bundle.regions:
            entries["memory_regions"] = region_arenas.manifest_entry(bundle.plan, bundle.regions)
        return entries


def _patches_markdown(patches: dict[str, Any] | None) -> str:
    """report.md's paragraph on the patch plan (none for a bundle run layer by layer)."""
    if patches is None:
        return ""
    rows, columns = patches["grid"]
    before = patches["arena_bytes_layer_by_layer"]
    arena = (f"{before:,} B layer by layer, {patches['arena_bytes']:,} B" if before is not None
             else f"{patches['arena_bytes']:,} B")
    layers = (f"The layers up to {markdown_text(patches['cut_layer'])} "
              f"(window stage {patches['cut_after_window_stage']})")
    if "streamed_bands" in patches:
        return ("\n## Patch-based execution\n\n"
                f"{layers} run streamed in {rows} bands of the output rows of window stage "
                f"{patches['bands_of_window_stage']} (`--patches`), each layer computing only its new rows from the "
                f"input rows kept from earlier bands: arena {arena}; {patches['extra_macs']:,} extra MACs.\n")
    return ("\n## Patch-based execution\n\n"
            f"{layers} run in a {rows}x{columns} grid of patches, each from its receptive field (`--patches`): arena "
            f"{arena}; {patches['extra_macs']:,} extra MACs (+{patches['extra_macs_percent']} %) for the patches' "
            "overlapping halos.\n")


def _scratch_forms_markdown(forms: dict[str, Any] | None) -> str:
    """report.md's paragraph on the kernels taken in their forms with less scratch (none when every kernel keeps
    its scratch)."""
    if forms is None:
        return ""
    kernels = ", ".join(f"`{name}` (-{entry['scratch_bytes_freed']:,} B of scratch, ~+{entry['extra_instructions']:,} "
                        "instructions estimated)" for name, entry in forms["kernels"].items())
    return (f"\n## Kernels without scratch\n\nThe memory plan takes {kernels} in a form with less scratch: arena "
            f"{forms['arena_bytes_with_scratch']:,} -> {forms['arena_bytes']:,} B for ~+"
            f"{forms['extra_instructions']:,} instructions per inference (estimated; the table's are measured). Every "
            "other kernel keeps its faster form.\n")


def _row_input_markdown(plan: ExecutionPlan) -> str:
    """report.md's paragraph on a row-wise input (none for a bundle that takes its input whole)."""
    rows = plan.row_input
    if rows is None:
        return ""
    bands = ", ".join(f"[{f.first_row}, {f.stop_row})" for f in rows.fetches)
    kept = sum(plan.tensors[k.halo].nbytes for k in rows.keeps)
    return ("\n## Row-wise input\n\n"
            f"The input ({rows.rows} rows of {rows.row_bytes:,} B) is not held: the run asks for its rows through "
            f"`read_row` (`--input-rows`), into {len(rows.fetches)} bands in the arena, rows {bands}; the rows two "
            f"bands share are kept in halos ({kept:,} B together), so each row is asked for once.\n")


def _stack_markdown(headroom: Headroom) -> str:
    """report.md's stack section: the stack of one run call as the fit check counted it, where it comes from (the
    profile's bound for the frames + the largest kernel's local arrays, target.StackBound) and, where the emulated
    board measured it, the measurement; "" where nothing was counted (a RamUse made without a bound)."""
    ram = headroom.ram
    bound = ram.stack_bound
    if bound is None:
        return ""
    measured = (f" The emulated board measured {ram.stack_bytes:,} B (`{headroom.profile.name}`; the RAM check "
                "counts the measurement)." if ram.stack_source is StackSource.MEASURED else "")
    return (f"\n## Stack\n\nCounted without a build: {bound.bytes:,} B, {bound.parts()}.{measured}\n")


def finish_bundle(out_dir: Path, bundle: BundleInputs, facts: BundleFacts, keep_cross_build: Path | None = None
                  ) -> Path:
    """Finish the bundle `write_bundle` wrote into `out_dir` and the build built: write manifest.json (once,
    with `facts`), report.md (the same per-call facts, packager.report), report.html (those facts, the memory
    plan, the operators and the headroom in one page, packager.report_html) and README.md
    (packager.bundle_readme), delete the build's intermediate
    files (objects, the host self-test program, the cross build's folder), then archive the folder; return the
    archive's path (`<model>.tar.gz`). With `keep_cross_build` (a folder that does not exist yet) the cross
    build's folder, when there is one, is moved there instead of deleted."""
    report = facts.layer_report(bundle)
    (out_dir / "manifest.json").write_text(
        manifest_json(manifest(bundle.plan, bundle.memory, bundle.buffers, facts.manifest_entries(bundle, report),
                               bundle.io_in_arena, bundle.regions))
    )
    (out_dir / REPORT_FILE).write_text(report.markdown() + _patches_markdown(facts.patches)
                                       + _scratch_forms_markdown(facts.scratch_forms)
                                       + _row_input_markdown(bundle.plan)
                                       + _stack_markdown(facts.headroom)
                                       + region_arenas.report_markdown(bundle.plan.model, bundle.regions))
    (out_dir / REPORT_HTML_FILE).write_text(report_html(HtmlReport(
        report, bundle.buffers, bundle.memory, facts.headroom, facts.operators,
        (facts.quantization or {}).get("layer_errors", ()), bundle.regions)), encoding="utf-8")
    inputs, outputs = bundle_io(bundle)
    readme = ReadmeFacts(bundle.config, facts.selftest, facts.untested, facts.measured)
    (out_dir / README_FILE).write_text(bundle_readme(bundle.plan, bundle.memory, inputs, outputs, readme,
                                                     bundle.regions))
    runner = bundle.config.emulated
    emulated_build = [out_dir / runner.build_dir] if runner is not None else []
    if keep_cross_build is not None and emulated_build and emulated_build[0].is_dir():
        shutil.move(emulated_build.pop(), keep_cross_build)
    for leftover in [*out_dir.glob("*.o"), out_dir / HOST_SELFTEST_PROGRAM, *emulated_build]:
        if leftover.is_dir():
            shutil.rmtree(leftover)
        else:
            leftover.unlink(missing_ok=True)
    return archive(out_dir, bundle.plan.model, top=bundle.plan.model)
