"""Every code block in README.md, docs/*.md and target/README.md runs, verbatim.

Fenced blocks only, each with a language:
- `python`: a document's python blocks run in order in one fresh interpreter, sharing their names as a reader
  following the page would;
- `bash`: each block runs on its own with `bash -euo pipefail`, the installed `tvm-ext-compile` on PATH, unless
  the line before it is `<!-- not run by tests/test_docs_snippets.py: <reason> -->`;
- `toml`: a file the pages go on to use (any page: docs/ points to target/README.md's); its first line
  `# <file name>: ...` names it;
- `text`: not code.
All run in a fresh folder holding `model.tflite` (TFLM's hello_world_float) and `model.onnx` (the built-in
example): the model files the snippets name.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import REPO

DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "target" / "README.md"]
FENCED_BLOCK = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
NOT_RUN = re.compile(r"<!-- not run by tests/test_docs_snippets\.py: (.+) -->\s*\Z")
LANGUAGES = {"python", "bash", "toml", "text"}
TOML_FILE_NAME = re.compile(r"# ([\w.-]+\.toml): ")
# Blocks that fail only for a reason another change removes: (document, text in the block) -> reason.
@dataclass(frozen=True)
class Snippet:
    """One fenced block: where it is, its language, its text, and why it is not run (None: it runs)."""

    document: str
    line: int
    language: str
    code: str
    not_run_because: str | None

    @property
    def where(self) -> str:
        return f"{self.document}:{self.line}"


def snippets(document: Path) -> list[Snippet]:
    text = document.read_text()
    found = []
    for block in FENCED_BLOCK.finditer(text):
        before = text[:block.start()]
        not_run = NOT_RUN.search(before)
        found.append(Snippet(str(document.relative_to(REPO)), before.count("\n") + 1, block.group(1).strip(),
                             block.group(2), not_run.group(1) if not_run else None))
    return found


ALL_SNIPPETS = [snippet for document in DOCUMENTS for snippet in snippets(document)]
SHELL_SNIPPETS = [snippet for snippet in ALL_SNIPPETS if snippet.language == "bash" and not snippet.not_run_because]
DOCUMENTS_WITH_PYTHON = sorted({snippet.document for snippet in ALL_SNIPPETS if snippet.language == "python"})


@pytest.fixture
def reader_folder(shared_models, tmp_path) -> Path:
    """A fresh working folder holding the model files the snippets name."""
    from tvm_ext.example import write_example_model

    shutil.copy(shared_models / "tflm/hello_world_float.tflite", tmp_path / "model.tflite")
    write_example_model(tmp_path / "model.onnx")
    return tmp_path


def write_toml_files(folder: Path) -> None:
    """Every document's toml files: a page may use a file another page shows (docs -> target/README.md)."""
    for snippet in ALL_SNIPPETS:
        if snippet.language == "toml":
            (folder / TOML_FILE_NAME.match(snippet.code).group(1)).write_text(snippet.code)


def test_the_documents_have_snippets():
    """The extraction itself works: a regression in the pattern must not make every other test vacuous."""
    assert {snippet.document for snippet in ALL_SNIPPETS} == {str(d.relative_to(REPO)) for d in DOCUMENTS}
    assert DOCUMENTS_WITH_PYTHON and SHELL_SNIPPETS


@pytest.mark.parametrize("snippet", ALL_SNIPPETS, ids=lambda snippet: snippet.where)
def test_every_snippet_says_what_it_is(snippet):
    assert snippet.language in LANGUAGES, f"{snippet.where}: fenced block without a known language"
    if snippet.language == "toml":
        assert TOML_FILE_NAME.match(snippet.code), f"{snippet.where}: first line must be '# <file>.toml: ...'"
    if snippet.not_run_because:
        assert snippet.language == "bash", f"{snippet.where}: only shell blocks may be left unrun"


@pytest.mark.parametrize("document", DOCUMENTS_WITH_PYTHON)
def test_python_snippets_run_in_order(document, reader_folder):
    write_toml_files(reader_folder)
    blocks = [(snippet.where, snippet.code) for snippet in ALL_SNIPPETS
              if snippet.document == document and snippet.language == "python"]
    runner = ("import json, sys\nnamespace = {'__name__': '__main__'}\n"
              "for where, code in json.load(sys.stdin):\n"
              "    exec(compile(code, where, 'exec'), namespace)\n")
    proc = subprocess.run([sys.executable, "-c", runner], input=json.dumps(blocks), cwd=reader_folder,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.parametrize("snippet", SHELL_SNIPPETS, ids=[snippet.where for snippet in SHELL_SNIPPETS])
def test_shell_snippet_runs(snippet, reader_folder):
    write_toml_files(reader_folder)
    environment = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", snippet.code], cwd=reader_folder, env=environment,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
