"""Build /generate meta_info by the meta_info code of three SGLang releases, into tests/engines/captured/.

SGLang cannot run here (it needs a GPU).  Its per-request counts are written by one method,
``TokenizerManager._calculate_spec_decoding_metrics`` (python/sglang/srt/managers/tokenizer_manager.py), whose key
names changed twice; this script runs that method, as each released package has it, on the same counts:

    for v in 0.5.10 0.5.11 0.5.12; do
        pip download --no-deps --only-binary=:all: sglang==$v -d SGLANG-$v && unzip -q SGLANG-$v/*.whl -d SGLANG-$v
    done
    python tests/engines/capture_sglang_meta.py SGLANG-0.5.10 SGLANG-0.5.11 SGLANG-0.5.12 \\
        > tests/engines/captured/sglang-0.5.10-0.5.12-meta-info.json

What is SGLang's: the method's body, compiled from each package's tokenizer_manager.py as it is (the module itself
is not imported: it needs torch, zmq and a GPU stack).  What is this script's: the stand-in ``self`` (only
``server_args.speculative_num_draft_tokens`` is read) and the stand-in scheduler output ``recv_obj`` holding each
request's counts under every attribute name the three releases read (``spec_accepted_tokens`` in 0.5.10,
``spec_accepted_drafts`` in 0.5.11, ``spec_num_correct_drafts`` in 0.5.12; ``spec_acceptance_histogram`` then
``spec_correct_drafts_histogram``), and the counts, made up here and consistent with the scheduler's own counting
(scheduler_output_processor_mixin.py: one verification adds accept_lens - 1 accepted draft tokens and one to the
histogram at that count; k = 3, speculative_num_draft_tokens 4).
"""

from __future__ import annotations

import ast
import json
import sys
import types
from pathlib import Path
from typing import Any, Union

DRAFT_TOKENS = 4  # speculative_num_draft_tokens: k = 3 draft tokens a verification
REQUESTS = (
    # (verifications, histogram: verifications that accepted exactly j draft tokens, completion tokens)
    (10, [2, 1, 4, 3], 28),
    (25, [5, 6, 8, 6], 65),
)


def method(root: Path) -> Any:
    """TokenizerManager._calculate_spec_decoding_metrics as the package at root has it."""
    path = root / "sglang" / "srt" / "managers" / "tokenizer_manager.py"
    tree = ast.parse(path.read_text())
    (found,) = [
        node
        for cls in tree.body
        if isinstance(cls, ast.ClassDef) and cls.name == "TokenizerManager"
        for node in cls.body
        if isinstance(node, ast.FunctionDef) and node.name == "_calculate_spec_decoding_metrics"
    ]
    names: dict[str, Any] = {"Dict": dict, "Any": Any, "Union": Union}
    names.update({name: object for name in ("BatchStrOutput", "BatchEmbeddingOutput", "BatchTokenIDOutput")})
    exec(compile(ast.Module(body=[found], type_ignores=[]), str(path), "exec"), names)
    return names["_calculate_spec_decoding_metrics"]


def recv_obj() -> Any:
    verify = [count for count, _, _ in REQUESTS]
    accepted = [sum(j * n for j, n in enumerate(histogram)) for _, histogram, _ in REQUESTS]
    histograms = [histogram for _, histogram, _ in REQUESTS]
    return types.SimpleNamespace(
        spec_verify_ct=verify,
        completion_tokens=[completion for _, _, completion in REQUESTS],
        spec_accepted_tokens=accepted,
        spec_accepted_drafts=accepted,
        spec_num_correct_drafts=accepted,
        spec_acceptance_histogram=histograms,
        spec_correct_drafts_histogram=histograms,
    )


def build(root: Path) -> list[dict[str, Any]]:
    fill = method(root)
    owner = types.SimpleNamespace(server_args=types.SimpleNamespace(speculative_num_draft_tokens=DRAFT_TOKENS))
    output = recv_obj()
    responses = []
    for i, (_, _, completion) in enumerate(REQUESTS):
        meta: dict[str, Any] = {"id": f"r{i}", "completion_tokens": completion}
        fill(owner, meta, output, i)
        responses.append({"text": "...", "meta_info": meta})
    return responses


def main(roots: list[str]) -> None:
    captured = {}
    for root in map(Path, roots):
        version = next(root.glob("sglang-*.dist-info")).name.removesuffix(".dist-info").split("-")[1]
        captured[version] = build(root)
    json.dump(captured, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
