"""A real draft/target pair: character n-gram models of two orders, run with the exact rule.

Corpus: the docstrings of a fixed list of standard-library modules and of
their public classes, functions and methods, collected in sorted order,
de-duplicated and joined by blank lines.  Every Python has them, nothing is
downloaded, and the same interpreter gives the same text on every run.
Characters outside printable ASCII and newline are dropped (tabs become
spaces), which leaves a 96-symbol vocabulary.

Smoothing: interpolated Kneser-Ney (Kneser & Ney 1995; Chen & Goodman 1999)
with one absolute discount per order, D = n1 / (n1 + 2 n2) from that order's
count-of-counts.  The highest order of a model uses raw counts, lower orders
use continuation counts (how many distinct characters precede an n-gram), and
the order-1 distribution is interpolated with the uniform one, so every
character has non-zero probability.  Counting is vectorised numpy over
integer-coded n-grams; tables are built on first use and cached.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from app.model.arithmetic import bursty, closed_form
from app.model.arithmetic.sampling import Chain, FloatArray, speculative_chain

CORPUS_MODULES: tuple[str, ...] = (
    "argparse", "ast", "base64", "bisect", "calendar", "collections", "configparser",
    "contextlib", "copy", "csv", "dataclasses", "datetime", "decimal", "difflib",
    "email.message", "enum", "fractions", "functools", "glob", "gzip", "hashlib", "heapq",
    "http.client", "inspect", "io", "itertools", "json", "logging", "math", "operator",
    "os", "pathlib", "pickle", "pprint", "queue", "random", "re", "sched", "shutil",
    "socket", "statistics", "string", "struct", "subprocess", "tarfile", "tempfile",
    "textwrap", "threading", "timeit", "traceback", "unittest", "urllib.parse", "uuid",
    "weakref", "zipfile", "zlib",
)  # fmt: skip

ALPHABET = "\n" + "".join(chr(code) for code in range(32, 127))
VOCAB = len(ALPHABET)
CHAR_TO_ID = {character: index for index, character in enumerate(ALPHABET)}
MAX_ORDER = 8  # VOCAB ** MAX_ORDER fits in int64

DEFAULT_PROMPT = "Return the "

TokenKind = Literal["prompt", "accepted", "rejected", "discarded", "corrected", "bonus"]


def _documented_objects(module: object) -> list[object]:
    objects: list[object] = [module]
    module_name = getattr(module, "__name__", "")
    for name, value in sorted(vars(module).items()):
        if name.startswith("_"):
            continue
        if not (inspect.isclass(value) or inspect.isfunction(value) or inspect.isbuiltin(value)):
            continue
        if getattr(value, "__module__", None) != module_name:
            continue
        objects.append(value)
        if inspect.isclass(value):
            objects.extend(
                member
                for member_name, member in sorted(vars(value).items())
                if not member_name.startswith("_") and inspect.isfunction(member)
            )
    return objects


def normalise_text(text: str) -> str:
    """Map text onto the alphabet: tabs to spaces, other characters outside it dropped."""
    text = text.replace("\t", " ").replace("\r\n", "\n")
    return "".join(character for character in text if character in CHAR_TO_ID)


@functools.cache
def corpus() -> str:
    """The training text (deterministic for a given interpreter)."""
    seen: set[str] = set()
    documents: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for module_name in CORPUS_MODULES:
            module = importlib.import_module(module_name)
            for documented in _documented_objects(module):
                doc = getattr(documented, "__doc__", None)
                if not isinstance(doc, str):
                    continue
                cleaned = normalise_text(inspect.cleandoc(doc)).strip()
                if cleaned and cleaned not in seen:
                    seen.add(cleaned)
                    documents.append(cleaned)
    return "\n\n".join(documents)


def encode(text: str) -> np.ndarray:
    unknown = sorted({character for character in text if character not in CHAR_TO_ID})
    if unknown:
        raise ValueError(f"characters outside printable ASCII: {''.join(unknown)!r}")
    return np.fromiter((CHAR_TO_ID[character] for character in text), dtype=np.int64, count=len(text))


def decode(tokens: Sequence[int]) -> str:
    return "".join(ALPHABET[token] for token in tokens)


@functools.cache
def corpus_ids() -> np.ndarray:
    ids = encode(corpus())
    ids.setflags(write=False)
    return ids


def _ngram_ids(ids: np.ndarray, order: int) -> np.ndarray:
    """Integer code of every n-gram of the given order: base-VOCAB digits, oldest first."""
    count = ids.size - order + 1
    codes = np.zeros(count, dtype=np.int64)
    for offset in range(order):
        codes *= VOCAB
        codes += ids[offset : offset + count]
    return codes


@dataclass(frozen=True)
class CountTable:
    """One order's counts grouped by context h, ready for interpolation.

    For context number i, its followers are ``words[starts[i]:starts[i + 1]]``
    with discounted relative frequencies ``max(c(h w) - D, 0) / c(h)`` in
    ``discounted``, and ``backoff[i] = D * N1+(h .) / c(h)`` is the weight
    left for the lower order.
    """

    order: int
    index: dict[int, int]  # context code -> context number
    starts: list[int]
    words: np.ndarray
    discounted: np.ndarray
    backoff: list[float]
    discount: float


def _table_from_keys(order: int, keys: np.ndarray, counts: np.ndarray) -> CountTable:
    contexts_all = keys // VOCAB
    words = keys - contexts_all * VOCAB
    contexts, starts = np.unique(contexts_all, return_index=True)
    counts = counts.astype(np.float64)
    totals = np.add.reduceat(counts, starts)
    distinct = np.diff(np.append(starts, keys.size)).astype(np.float64)
    ones = int(np.count_nonzero(counts == 1))
    twos = int(np.count_nonzero(counts == 2))
    discount = ones / (ones + 2 * twos) if ones + twos else 0.5
    discount = min(max(discount, 0.05), 0.95)
    per_key_total = np.repeat(totals, np.diff(np.append(starts, keys.size)))
    return CountTable(
        order=order,
        index=dict(zip(contexts.tolist(), range(contexts.size), strict=True)),
        starts=np.append(starts, keys.size).tolist(),
        words=words,
        discounted=np.maximum(counts - discount, 0.0) / per_key_total,
        backoff=(discount * distinct / totals).tolist(),
        discount=discount,
    )


class NgramCounts:
    """Count tables of every order over one token sequence, built on first use and kept."""

    def __init__(self, ids: np.ndarray) -> None:
        self.ids = np.asarray(ids, dtype=np.int64)
        self._unique: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._raw: dict[int, CountTable] = {}
        self._continuation: dict[int, CountTable] = {}

    def unique_ngrams(self, order: int) -> tuple[np.ndarray, np.ndarray]:
        if order not in self._unique:
            keys, counts = np.unique(_ngram_ids(self.ids, order), return_counts=True)
            self._unique[order] = (keys, counts)
        return self._unique[order]

    def raw(self, order: int) -> CountTable:
        """c(h w) for n-grams of this order."""
        if order not in self._raw:
            keys, counts = self.unique_ngrams(order)
            self._raw[order] = _table_from_keys(order, keys, counts)
        return self._raw[order]

    def continuation(self, order: int) -> CountTable:
        """N1+(. h w): how many distinct tokens precede each n-gram of this order."""
        if order not in self._continuation:
            longer_keys, _ = self.unique_ngrams(order + 1)
            keys, counts = np.unique(longer_keys % VOCAB**order, return_counts=True)
            self._continuation[order] = _table_from_keys(order, keys, counts)
        return self._continuation[order]


@functools.cache
def corpus_counts() -> NgramCounts:
    return NgramCounts(corpus_ids())


class NgramModel:
    """Interpolated Kneser-Ney character model of a given order, with a sampling temperature."""

    def __init__(self, order: int, temperature: float = 1.0, counts: NgramCounts | None = None) -> None:
        if not 1 <= order <= MAX_ORDER:
            raise ValueError(f"order must lie in 1..{MAX_ORDER}")
        if temperature <= 0:
            raise ValueError("temperature must be positive")
        counts = corpus_counts() if counts is None else counts
        self.order = order
        self.temperature = temperature
        self.tables = [counts.continuation(m) for m in range(1, order)] + [counts.raw(order)]

    def distribution(self, context: Sequence[int]) -> FloatArray:
        """P(next | context), highest order first: P_m = r_m + backoff_m * P_(m-1), P_0 uniform."""
        width_available = min(len(context), self.order - 1)
        codes = [0] * (width_available + 1)  # codes[w]: the last w tokens as one integer
        for width in range(1, width_available + 1):
            codes[width] = codes[width - 1] + context[len(context) - width] * VOCAB ** (width - 1)
        probabilities = np.zeros(VOCAB)
        weight = 1.0
        for table in reversed(self.tables):
            width = table.order - 1
            if width > width_available:
                continue
            index = table.index.get(codes[width])
            if index is None:
                continue  # unseen context: all weight to the lower order
            start, end = table.starts[index], table.starts[index + 1]
            probabilities[table.words[start:end]] += weight * table.discounted[start:end]
            weight *= table.backoff[index]
        probabilities += weight / VOCAB
        if self.temperature != 1.0:
            probabilities **= 1.0 / self.temperature
            probabilities /= probabilities.sum()
        return probabilities

    def __call__(self, context: Sequence[int]) -> FloatArray:
        return self.distribution(context)


def train(orders: Sequence[int]) -> None:
    """Build (and cache) every table the given model orders need."""
    for order in orders:
        NgramModel(order)


@dataclass(frozen=True)
class PositionStats:
    position: int  # 1-based draft position within a cycle
    verified: int
    accepted: int
    acceptance: float | None
    mean_overlap: float | None  # mean of sum min(p, q) over those verifications

    @property
    def standard_error(self) -> float | None:
        """Binomial standard error of the acceptance at this position."""
        if self.acceptance is None:
            return None
        return math.sqrt(self.acceptance * (1.0 - self.acceptance) / self.verified)


@dataclass(frozen=True)
class Segment:
    text: str
    kind: TokenKind


@dataclass(frozen=True)
class PairRun:
    draft_order: int
    target_order: int
    k: int
    temperature: float
    seed: int
    cycles: int
    generated: int
    verified: int
    accepted: int
    acceptance: float  # accepted / verified: the i.i.d. estimate of p
    acceptance_standard_error: float
    mean_overlap: float  # mean sum min(p, q) over verified positions: the rule's own acceptance probability
    draft_acceptance_rate: float  # accepted / drafted, as a serving engine reports it
    mean_tokens_per_cycle: float
    tokens_standard_error: float
    autocorrelation: float | None  # lag-1, of the verified-draft outcomes in order
    closed_form_tokens: float  # i.i.d. closed form at the measured acceptance
    closed_form_from_rate: float  # i.i.d. closed form at the p implied by the draft acceptance rate
    bursty_tokens: float | None  # Markov model at the measured acceptance and autocorrelation
    per_position: list[PositionStats]
    segments: list[Segment]
    text: str
    chain: Chain


def _segments(chain: Chain, prompt_text: str) -> list[Segment]:
    """The run as marked text: accepted drafts, the rejected draft and its discarded tail, corrections, bonuses."""
    pieces: list[tuple[str, TokenKind]] = [(prompt_text, "prompt")] if prompt_text else []
    for cycle in chain.cycles:
        kept = cycle.drafted[: cycle.accepted]
        if kept:
            pieces.append((decode(kept), "accepted"))
        if not cycle.bonus:
            pieces.append((decode(cycle.drafted[cycle.accepted : cycle.accepted + 1]), "rejected"))
            tail = cycle.drafted[cycle.accepted + 1 :]
            if tail:
                pieces.append((decode(tail), "discarded"))
            pieces.append((decode([cycle.emitted]), "corrected"))
        else:
            pieces.append((decode([cycle.emitted]), "bonus"))
    merged: list[Segment] = []
    for text, kind in pieces:
        if merged and merged[-1].kind == kind:
            merged[-1] = Segment(merged[-1].text + text, kind)
        else:
            merged.append(Segment(text, kind))
    return merged


def run_pair(
    k: int,
    tokens: int,
    seed: int,
    temperature: float = 1.0,
    draft_order: int = 2,
    target_order: int = 5,
    prompt: str = DEFAULT_PROMPT,
) -> PairRun:
    """Speculative sampling with the draft and target n-gram models; measured against the closed form."""
    if k < 1:
        raise ValueError("k must be at least 1")
    if draft_order >= target_order:
        raise ValueError("the draft's order must be below the target's")
    draft = NgramModel(draft_order, temperature)
    target = NgramModel(target_order, temperature)
    prompt_ids = encode(prompt).tolist() if prompt else [CHAR_TO_ID["\n"]]
    chain = speculative_chain(target, draft, prompt_ids, k, tokens, seed, record_steps=False)

    verified_at = np.zeros(k, dtype=np.int64)
    accepted_at = np.zeros(k, dtype=np.int64)
    overlap_at = np.zeros(k)
    for cycle in chain.cycles:
        verified = cycle.verified
        verified_at[:verified] += 1
        accepted_at[: cycle.accepted] += 1
        overlap_at[:verified] += cycle.overlaps[:verified]
    per_position = [
        PositionStats(
            position=i + 1,
            verified=int(verified_at[i]),
            accepted=int(accepted_at[i]),
            acceptance=float(accepted_at[i] / verified_at[i]) if verified_at[i] else None,
            mean_overlap=float(overlap_at[i] / verified_at[i]) if verified_at[i] else None,
        )
        for i in range(k)
    ]
    verified_total = int(verified_at.sum())
    accepted_total = int(accepted_at.sum())
    acceptance = accepted_total / verified_total
    accepted_per_cycle = np.array([cycle.accepted for cycle in chain.cycles], dtype=np.float64)
    cycles = accepted_per_cycle.size
    tokens_per_cycle = accepted_per_cycle + 1.0
    stream = np.array(chain.acceptance_stream(), dtype=np.int8)
    autocorrelation = bursty.lag1_autocorrelation(stream)
    draft_rate = accepted_total / (k * cycles)
    bursty_tokens = None
    if autocorrelation is not None:
        low, high = bursty.rho_bounds(acceptance)
        bursty_tokens = bursty.expected_tokens(acceptance, k, min(max(autocorrelation, low), high))
    prompt_text = decode(prompt_ids) if prompt else ""
    generated_ids = chain.sequence[chain.prompt_length :]
    return PairRun(
        draft_order=draft_order,
        target_order=target_order,
        k=k,
        temperature=temperature,
        seed=seed,
        cycles=cycles,
        generated=chain.generated,
        verified=verified_total,
        accepted=accepted_total,
        acceptance=acceptance,
        acceptance_standard_error=math.sqrt(acceptance * (1.0 - acceptance) / verified_total),
        mean_overlap=float(overlap_at.sum() / verified_total),
        draft_acceptance_rate=draft_rate,
        mean_tokens_per_cycle=float(tokens_per_cycle.mean()),
        tokens_standard_error=float(tokens_per_cycle.std(ddof=1) / math.sqrt(cycles)) if cycles > 1 else 0.0,
        autocorrelation=autocorrelation,
        closed_form_tokens=closed_form.expected_tokens(acceptance, k),
        closed_form_from_rate=closed_form.expected_tokens(closed_form.acceptance_from_draft_rate(draft_rate, k), k),
        bursty_tokens=bursty_tokens,
        per_position=per_position,
        segments=_segments(chain, prompt_text),
        text=prompt_text + decode(generated_ids),
        chain=chain,
    )
