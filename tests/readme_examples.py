"""Running a bundle README's C usage example: what tests of README.md (a bundle of one model or several) share."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from c_checks import STRICT_WARNINGS

_MAIN = """
int classify({parameter});

int main(void)
{{
  static {element} values[{elements}];
  for (unsigned i = 0; i < {elements}; ++i) values[i] = ({element})(i % 7u);
  printf("%d\\n", classify(values));
  return 0;
}}
"""


def example_runs(out: Path, tmp_path: Path, library: str | None = None, index: int = 0) -> int:
    """Compile the `index`th C example of OUT/README.md (a code block starting with an #include) with a main()
    calling it (strict warnings as errors), link it with `lib<library>.a` (default: the example's model's), run
    it, return what `classify` returned."""
    readme = (out / "README.md").read_text()
    example = re.findall(r"^```c\n(#include .*?)^```", readme, re.MULTILINE | re.DOTALL)[index]
    parameter = re.search(r"^int classify\((.*)\)$", example, re.MULTILINE).group(1)
    model = re.search(r'#include "(\w+)\.h"', example).group(1)
    element = "float" if parameter.startswith("const float") else f"{model.upper()}_INPUT0_TYPE"
    source = tmp_path / f"main{index}.c"
    source.write_text("#include <stdio.h>\n" + example + _MAIN.format(
        parameter=parameter, element=element, elements=f"{model.upper()}_INPUT0_ELEMENTS"))
    program = tmp_path / f"main{index}"
    subprocess.run(["gcc", "-std=c99", "-O1", "-Wall", "-Wextra", *STRICT_WARNINGS.split(), f"-I{out}", str(source),
                    str(out / f"lib{library or model}.a"), "-lm", "-o", str(program)], check=True)
    return int(subprocess.run([str(program)], capture_output=True, text=True, check=True).stdout)
