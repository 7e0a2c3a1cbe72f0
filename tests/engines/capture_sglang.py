"""Build SGLang's OpenAI responses with per-request counts by SGLang's own code, into tests/engines/captured/.

SGLang cannot run here (it needs a GPU), so the responses are built from the released package's own pydantic
models and functions, the way its endpoints build them (PR #33518):

    pip download --no-deps sglang==0.5.23 && unzip -q sglang-0.5.23-*.whl -d SGLANG
    python -m venv VENV && VENV/bin/pip install pydantic openai msgspec numpy pybase64 requests ipython tqdm
    VENV/bin/python tests/engines/capture_sglang.py SGLANG > tests/engines/captured/sglang-0.5.23-openai.json

What is SGLang's: ``sglang.srt.entrypoints.openai.protocol`` (ChatCompletionResponse, CompletionResponse,
ChatCompletionStreamResponse, SglExt, SpecTokensDetails, their serializers) and
``sglang.srt.entrypoints.openai.utils.process_spec_tokens_details_from_ret`` (which calls
``spec_tokens_details_from_meta_info``).  What is this script's: the package is loaded without its ``__init__``
files and with a stand-in ``torch`` module (utils.py imports torch only for ``convert_embeds_to_tensors``); the
three lines that put the details at the response level, one object for n = 1 and a list for n > 1, follow
serving_completions.py ``_build_completion_response`` and serving_chat.py's streaming branch of the same package;
and the meta_info the details are copied from.  That meta_info is, for the first request, the counts of the real
DSpark response posted in PR #33518's thread (2026-08-07: spec_num_correct_drafts 63, spec_num_proposed_drafts 215,
spec_verify_ct 43, spec_correct_drafts_histogram [11, 14, 11, 4, 0, 3], completion_tokens 106, block size 5); the
second request's are made up here, consistent with TokenizerManager._calculate_spec_decoding_metrics (proposed =
verifications * 5, the histogram sums to the verifications and its first moment to the accepted).
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

REAL = {"completion_tokens": 106, "verify": 43, "correct": 63, "histogram": [11, 14, 11, 4, 0, 3]}
MADE_UP = {"completion_tokens": 51, "verify": 20, "correct": 31, "histogram": [6, 5, 4, 3, 1, 1]}
K = 5  # speculative_num_draft_tokens - 1 (DSpark block size 5)


def meta_info(counts: dict[str, Any]) -> dict[str, Any]:
    """meta_info as TokenizerManager._calculate_spec_decoding_metrics (sglang 0.5.23) fills it."""
    proposed = counts["verify"] * K
    return {
        "id": "x",
        "finish_reason": {"type": "length", "length": counts["completion_tokens"]},
        "completion_tokens": counts["completion_tokens"],
        "spec_accept_rate": counts["correct"] / proposed,
        "spec_accept_length": counts["completion_tokens"] / counts["verify"],
        "spec_num_correct_drafts": counts["correct"],
        "spec_num_proposed_drafts": proposed,
        "spec_verify_ct": counts["verify"],
        "spec_correct_drafts_histogram": counts["histogram"],
    }


def load(root: Path) -> tuple[Any, Any]:
    sys.path.insert(0, str(root))
    torch = types.ModuleType("torch")
    torch.Tensor = object  # type: ignore[attr-defined]
    sys.modules["torch"] = torch
    for name in ("sglang", "sglang.srt", "sglang.srt.entrypoints", "sglang.srt.entrypoints.openai"):
        package = types.ModuleType(name)
        package.__path__ = [str(root.joinpath(*name.split(".")))]
        sys.modules[name] = package
    from sglang.srt.entrypoints.openai import protocol, utils  # type: ignore[import-not-found]

    return protocol, utils


def build(root: Path) -> list[Any]:
    protocol, utils = load(root)
    usage = protocol.UsageInfo(prompt_tokens=12, completion_tokens=106, total_tokens=118)
    ret = [{"text": "...", "meta_info": meta_info(REAL)}, {"text": "...", "meta_info": meta_info(MADE_UP)}]

    def at_response_level(request: Any, items: list[dict[str, Any]]) -> Any:
        details = [d for d in (utils.process_spec_tokens_details_from_ret(i, request) for i in items) if d is not None]
        return details if request.n > 1 else (details[0] if details else None)

    chat = protocol.ChatCompletionRequest(
        model="default", messages=[{"role": "user", "content": "Hi"}], return_spec_tokens_details=True
    )
    chat_response = protocol.ChatCompletionResponse(
        id="chat-1",
        created=0,
        model="default",
        choices=[
            protocol.ChatCompletionResponseChoice(
                index=0, message=protocol.ChatMessage(role="assistant", content="..."), finish_reason="length"
            )
        ],
        usage=usage,
        sglext=protocol.SglExt(spec_tokens_details=at_response_level(chat, ret[:1])),
    )
    completion = protocol.CompletionRequest(model="default", prompt="Hi", n=2, return_spec_tokens_details=True)
    completion_response = protocol.CompletionResponse(
        id="cmpl-1",
        created=0,
        model="default",
        choices=[protocol.CompletionResponseChoice(index=i, text="...", finish_reason="length") for i in range(2)],
        usage=usage,
        sglext=protocol.SglExt(spec_tokens_details=at_response_level(completion, ret)),
    )
    stream_chunk = protocol.ChatCompletionStreamResponse(
        id="chat-2",
        created=0,
        choices=[],
        model="default",
        sglext=protocol.SglExt(spec_tokens_details=at_response_level(chat, ret[1:])),
    )
    without = protocol.ChatCompletionRequest(model="default", messages=[{"role": "user", "content": "Hi"}])
    plain = protocol.ChatCompletionResponse(
        id="chat-3",
        created=0,
        model="default",
        choices=[
            protocol.ChatCompletionResponseChoice(
                index=0, message=protocol.ChatMessage(role="assistant", content="..."), finish_reason="length"
            )
        ],
        usage=usage,
        sglext=None if at_response_level(without, ret[:1]) is None else "unexpected",
    )
    return [json.loads(r.model_dump_json()) for r in (chat_response, completion_response, stream_chunk, plain)]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/engines/capture_sglang.py UNPACKED_SGLANG_WHEEL")
    print(json.dumps(build(Path(sys.argv[1])), indent=1))
