"""The engines' part of docs/engines.md, written from the adapters (so the doc says what the code does).

`python -m app.model.engines.doc` prints it; `--write` replaces the block between the markers in
docs/engines.md.  A test holds the file to the adapters.
"""

from __future__ import annotations

import sys
from pathlib import Path

from app.model import engines

BEGIN = "<!-- engines: written by python -m app.model.engines.doc --write -->"
END = "<!-- /engines -->"
DOC = Path(__file__).resolve().parents[3] / "docs" / "engines.md"


def block() -> str:
    lines = [BEGIN, ""]
    for name, module in engines.ADAPTERS.items():
        lines += [f"### {module.TITLE} (`engine={name}`)", ""]
        lines += ["| version | what set it | can | read from |", "| --- | --- | --- | --- |"]
        for version in module.VERSIONS:
            aliases = [alias for alias, target in module.ALIASES.items() if target == version.name]
            named = f"`{version.name}`" + (f" (also {', '.join(f'`{a}`' for a in aliases)})" if aliases else "")
            sources = "<br>".join(source.cite() for source in version.sources)
            can = ", ".join(f"`{name}`" for name in sorted(version.capabilities)) or "-"
            lines.append(f"| {named} | {version.change} | {can} | {sources} |")
        lines += ["", "| report format | what it is | written by versions |", "| --- | --- | --- |"]
        for report in module.REPORTS:
            versions = ", ".join(report.versions) or "older releases"
            lines.append(f"| `{report.name}` | {report.description} | {versions} |")
        lines += ["", f"Drafters (`method`): {', '.join(f'`{m}`' for m in module.METHODS)}."]
        heads = ", ".join(f"`{head}` as `{method}`" for head, method in module.HEAD_METHODS.items())
        lines += [f"A setup priced with a head (`draft=`) runs, where no method is given: {heads or 'none'}.", ""]
        for watched in module.WATCHED:
            state = "merged, followed" if watched.merged else "not merged, not followed"
            lines += [f"Watched: PR #{watched.pr} ({watched.change}): {state}; {watched.checked}.", ""]
    lines.append(END)
    return "\n".join(lines)


def updated(text: str) -> str:
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + block() + text[end:]


if __name__ == "__main__":
    if "--write" in sys.argv:
        DOC.write_text(updated(DOC.read_text()))
    else:
        sys.stdout.write(block() + "\n")
