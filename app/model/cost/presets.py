"""Hardware and model presets for the roofline regime.

Presets are plain frozen dataclasses: every field can be replaced one by one
(``dataclasses.replace`` or :func:`with_overrides`), so the API and the page
let a user edit any value.  Figures carry their source in a comment.

Accelerator figures are the vendor's peak HBM bandwidth and peak *dense*
BF16 tensor throughput (never the "with sparsity" figures, which are twice
as large).  Units: bandwidth in TB/s (1e12 bytes per second), compute in
TFLOPS (1e12 floating-point operations per second), memory in GB (1e9
bytes).  Model parameter counts are in billions.  An accelerator's link is
the datasheet's interconnect bandwidth per device, both directions together,
in GB/s: what a tensor-parallel all-reduce crosses between two devices
(NVLink or Infinity Fabric where the board has it, PCIe otherwise).  Its
FP8 figure, also dense, is the rate at which FP8 weights multiply (W8A8);
none where the device has no FP8 tensor rate or none is taken here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from app.model.limits import FieldError


@dataclass(frozen=True)
class Accelerator:
    name: str
    bandwidth_tb_s: float
    bf16_tflops: float
    memory_gb: float
    link_gb_s: float | None = None  # None: the all-reduces' payload is not priced
    links: int | None = None  # point-to-point links link_gb_s is split over (a mesh); None: through a switch
    fp8_tflops: float | None = None  # peak dense FP8 tensor rate; None: FP8 weights multiply at the BF16 rate

    def __post_init__(self) -> None:
        for field in ("bandwidth_tb_s", "bf16_tflops", "memory_gb"):
            if not getattr(self, field) > 0:
                raise FieldError(field, "{0} must be positive")
        for field in ("link_gb_s", "fp8_tflops"):
            if getattr(self, field) is not None and not getattr(self, field) > 0:
                raise FieldError(field, "{0} must be positive")
        if self.links is not None and not (isinstance(self.links, int) and self.links >= 1):
            raise FieldError("links", "{0} must be a whole number, at least 1")


@dataclass(frozen=True)
class ModelSpec:
    """A transformer as the roofline sees it.

    ``experts`` routed experts per MoE layer of which ``experts_per_token``
    are used by each token (1 and 1 for a dense model).  ``kv_heads`` x
    ``head_dim`` x ``kv_tensors`` values per layer per token are cached:
    ``kv_tensors`` is 2 for separate keys and values and 1 for one shared
    latent vector (DeepSeek's multi-head latent attention, whose latent plus
    rotary part we enter as one "head" of width 576).  ``query_heads`` x
    ``head_dim`` is the attention width used to count attention FLOPs.
    """

    name: str
    total_params_b: float
    active_params_b: float
    layers: int
    query_heads: int
    kv_heads: int
    head_dim: int
    kv_tensors: int = 2
    experts: int = 1
    experts_per_token: int = 1
    hidden: int | None = None  # the residual stream's width; None: query_heads x head_dim

    def __post_init__(self) -> None:
        for field in ("total_params_b", "active_params_b"):
            if not getattr(self, field) > 0:
                raise FieldError(field, f"{{0}} must be positive; got {getattr(self, field)}")
        for field in ("layers", "query_heads", "kv_heads", "head_dim", "experts", "experts_per_token"):
            if getattr(self, field) < 1:
                raise FieldError(field, "{0} must be at least 1")
        if self.hidden is not None and self.hidden < 1:
            raise FieldError("hidden", "{0} must be at least 1")
        if self.kv_tensors not in (1, 2):
            raise FieldError("kv_tensors", "{0} must be 1 (shared latent) or 2 (keys and values)")
        if self.active_params_b > self.total_params_b:
            raise FieldError(
                "active_params_b",
                f"{{0}} ({self.active_params_b:g}) must not exceed {{1}} ({self.total_params_b:g})",
                "total_params_b",
            )
        if self.experts_per_token > self.experts:
            raise FieldError(
                "experts_per_token",
                f"{{0}} ({self.experts_per_token}) must not exceed {{1}} ({self.experts})",
                "experts",
            )
        least_active = self.total_params_b * self.expert_fraction
        if self.is_moe and self.active_params_b < least_active * (1 - 1e-12):
            raise FieldError(
                "active_params_b",
                f"{{0}} ({self.active_params_b:g}) must be at least {{1}} * {{2}} / {{3}} ({least_active:g}):"
                " each token uses its share of the routed experts",
                "total_params_b",
                "experts_per_token",
                "experts",
            )

    @property
    def is_moe(self) -> bool:
        return self.experts_per_token < self.experts

    @property
    def expert_fraction(self) -> float:
        """a / E: the share of routed experts one token uses."""
        return self.experts_per_token / self.experts

    @property
    def routed_params_b(self) -> float:
        """Parameters in routed experts, R, from total = S + R and active = S + R a/E."""
        if not self.is_moe:
            return 0.0
        return (self.total_params_b - self.active_params_b) / (1.0 - self.expert_fraction)

    @property
    def shared_params_b(self) -> float:
        """Parameters every token reads: attention, embeddings, dense layers, shared experts."""
        return self.total_params_b - self.routed_params_b

    @property
    def width(self) -> int:
        """The hidden state's width: what a tensor-parallel all-reduce carries per token."""
        return self.hidden or self.query_heads * self.head_dim

    @property
    def kv_values_per_token(self) -> int:
        return self.layers * self.kv_heads * self.head_dim * self.kv_tensors


@dataclass(frozen=True)
class WeightFormat:
    """How a weight format is stored and multiplied."""

    bytes_per_param: float
    # Multiplies in FP8, at the accelerator's FP8 rate where it has one: vLLM, SGLang and TensorRT-LLM serve an FP8
    # checkpoint W8A8, quantizing each pass's activations to FP8 too.  Every other format multiplies at the BF16
    # rate (int4 weights, W4A16, are widened to BF16 before they multiply; FP4's own rate is not priced).
    fp8: bool = False


# Every weight format priced.  The block formats are their blocks' sizes: llama.cpp's ggml/src/ggml-common.h at
# 01243c58 (Q8_0 34 bytes per 32 weights, Q4_K 144 per 256, Q5_K 176 per 256, Q6_K 210 per 256, IQ3_XXS 98 per
# 256, MXFP4 17 per 32), NVFP4 one FP8 scale per 16 FP4 values, MLX's affine 8-bit with a 16-bit scale and bias
# per group of 64.  Mixes (Q4_K_M, Unsloth's dynamic quantizations) have no one size and are not priced.
WEIGHTS: dict[str, WeightFormat] = {
    "bf16": WeightFormat(2.0),
    "fp8": WeightFormat(1.0, fp8=True),
    "fp4": WeightFormat(0.5),
    "int4": WeightFormat(0.5),
    "q8_0": WeightFormat(34 / 32),
    "q4_k": WeightFormat(144 / 256),
    "q5_k": WeightFormat(176 / 256),
    "q6_k": WeightFormat(210 / 256),
    "iq3_xxs": WeightFormat(98 / 256),
    "mxfp4": WeightFormat(17 / 32),
    "nvfp4": WeightFormat(9 / 16),
    "mlx-8bit-g64": WeightFormat(68 / 64),
}
# The formats a setup offers, with their bytes per stored parameter.
WEIGHT_FORMATS: dict[str, float] = {name: WEIGHTS[name].bytes_per_param for name in ("bf16", "fp8", "int4")}

ACCELERATORS: dict[str, Accelerator] = {
    # NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM column: HBM2e 2,039 GB/s,
    # BF16 Tensor Core 312 TFLOPS (624 is the sparsity figure), 80 GB.
    # Link: NVLink 600 GB/s (same datasheet).
    # No FP8 tensor rate (Ampere): FP8 weights multiply at the BF16 rate.
    "a100-80gb-sxm": Accelerator("A100 80GB SXM", 2.039, 312.0, 80.0, 600.0),
    # NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column: 3.35 TB/s, BF16 Tensor Core
    # 1,979 TFLOPS "with sparsity", so 989.4 dense (H100 whitepaper table), 80 GB.
    # Link: NVLink 900 GB/s (same datasheet).  FP8 Tensor Core 3,958 TFLOPS with sparsity, so 1,978.9 dense.
    "h100-sxm": Accelerator("H100 SXM", 3.35, 989.4, 80.0, 900.0, fp8_tflops=1978.9),
    # NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column: 4.8 TB/s, BF16 Tensor Core
    # 1,979 TFLOPS with sparsity, so 989.4 dense (same GH100 die as H100), 141 GB HBM3e.
    # Link: NVLink 900 GB/s (same datasheet).  FP8 Tensor Core 3,958 TFLOPS with sparsity, so 1,978.9 dense.
    "h200": Accelerator("H200 SXM", 4.8, 989.4, 141.0, 900.0, fp8_tflops=1978.9),
    # NVIDIA HGX B200 specifications (1,000 W B200): 64 TB/s HBM3e and 1,440 GB over 8 GPUs,
    # i.e. 8 TB/s and 180 GB each; FP16/BF16 Tensor Core 4.5 PFLOPS per GPU with sparsity,
    # so 2,250 TFLOPS dense.
    # Link: NVLink 1.8 TB/s per GPU (fifth generation, same page).  FP8 Tensor Core 72 PFLOPS over 8 GPUs with
    # sparsity, so 4,500 TFLOPS dense each.
    "b200": Accelerator("B200 (HGX)", 8.0, 2250.0, 180.0, 1800.0, fp8_tflops=4500.0),
    # AMD Instinct MI300X data sheet: 5.3 TB/s HBM3, 192 GB, peak BF16 1,307.4 TFLOPS dense
    # (2,614.9 is the sparsity figure).
    # Link: Infinity Fabric 896 GB/s peak over 7 links (same data sheet).  Peak FP8 2,614.9 TFLOPS dense.
    "mi300x": Accelerator("MI300X", 5.3, 1307.4, 192.0, 896.0, links=7, fp8_tflops=2614.9),
    # NVIDIA A100 Tensor Core GPU datasheet, A100 40GB SXM column: HBM2 1,555 GB/s, BF16 Tensor Core 312 TFLOPS
    # dense, 40 GB.
    # Link: NVLink 600 GB/s (same datasheet).
    # No FP8 tensor rate (Ampere): FP8 weights multiply at the BF16 rate.
    "a100-40gb-sxm": Accelerator("A100 40GB SXM", 1.555, 312.0, 40.0, 600.0),
    # NVIDIA GB200 NVL72 specifications: 13.4 TB of HBM3e and 576 TB/s over 72 Blackwell GPUs (186 GB and 8 TB/s
    # each), FP16/BF16 Tensor Core 360 PFLOPS with sparsity, so 2,500 TFLOPS dense per GPU.
    # Link: NVLink 130 TB/s over the 72 GPUs, 1.8 TB/s each (same page).  FP8 Tensor Core 720 PFLOPS with sparsity,
    # so 5,000 TFLOPS dense per GPU.
    "gb200": Accelerator("GB200 (per Blackwell GPU)", 8.0, 2500.0, 186.0, 1800.0, fp8_tflops=5000.0),
    # NVIDIA Ampere GA102 GPU architecture whitepaper, GeForce RTX 3090: GDDR6X 936 GB/s, 24 GB; peak FP16/BF16
    # Tensor TFLOPS with FP32 accumulate 71 dense (142 with sparsity; 142 dense with FP16 accumulate).
    # Link: PCIe 4.0 x16, 64 GB/s both ways (a bridge is optional).
    # No FP8 tensor rate (Ampere): FP8 weights multiply at the BF16 rate.
    "rtx-3090": Accelerator("GeForce RTX 3090", 0.936, 71.0, 24.0, 64.0),
    # AMD Instinct MI355X data sheet: 8 TB/s HBM3E, 288 GB, peak FP16/BF16 2,516.6 TFLOPS dense (the sparsity
    # figure is twice that).
    # Link: Infinity Fabric 1,075.2 GB/s peak over 7 links (same data sheet).  Peak FP8 5,033.2 TFLOPS dense.
    "mi355x": Accelerator("MI355X", 8.0, 2516.6, 288.0, 1075.2, links=7, fp8_tflops=5033.2),
    # GeForce RTX 3060 12GB: 192-bit GDDR6 at 15 Gbps, 360 GB/s, 12 GB (NVIDIA's specifications); NVIDIA's launch
    # figure of 101 "tensor TFLOPS" is FP16 with sparsity and FP16 accumulate, so 25.3 dense with FP32 accumulate
    # (a quarter of it, as the GA102 whitepaper's ratios for the RTX 3090 give).
    # Link: PCIe 4.0 x16, 64 GB/s both ways.
    # No FP8 tensor rate (Ampere): FP8 weights multiply at the BF16 rate.
    "rtx-3060-12gb": Accelerator("GeForce RTX 3060 12GB", 0.360, 25.3, 12.0, 64.0),
    # AMD Radeon AI PRO R9700 product page: 32 GB GDDR6 on 256 bits at 20 Gbps (640 GB/s), 389 TFLOPS FP16 matrix
    # with sparsity, so 194.6 dense.
    # Link: PCIe 5.0 x16, 128 GB/s both ways (same page).
    # No FP8 figure is taken here: FP8 weights are priced at the BF16 rate.
    "radeon-ai-pro-r9700": Accelerator("Radeon AI PRO R9700", 0.640, 194.6, 32.0, 128.0),
    # Intel Arc Pro B70: 32 GB GDDR6 at 608 GB/s on 256 bits, 367 INT8 TOPS on its XMX engines (Intel's product
    # page); Intel gives no FP16 figure, and XMX runs FP16 at half its INT8 rate: 183.5.
    # Link: the page gives no host interface figure, so the all-reduces' payload is not priced.
    # No FP8 figure is taken here: FP8 weights are priced at the BF16 rate.
    "arc-pro-b70": Accelerator("Arc Pro B70", 0.608, 183.5, 32.0),
    # NVIDIA Ada GPU architecture whitepaper (v2.1), Appendix A, GeForce RTX 4090: GDDR6X 1,008 GB/s on 384 bits,
    # 24 GB; peak BF16 Tensor TFLOPS with FP32 accumulate 165.2 dense (330.4 with sparsity).
    # Link: PCIe 4.0 x16, 64 GB/s both ways (the card has no NVLink).  Peak FP8 Tensor TFLOPS with FP32 accumulate
    # 330.3 dense (same table).
    "rtx-4090": Accelerator("GeForce RTX 4090", 1.008, 165.2, 24.0, 64.0, fp8_tflops=330.3),
    # NVIDIA H100 Tensor Core GPU datasheet, H100 PCIe column: HBM2e 2 TB/s, BF16 Tensor Core 1,513 TFLOPS with
    # sparsity, so 756.5 dense, 80 GB.
    # Link: PCIe Gen5 128 GB/s (same column; its 600 GB/s NVLink needs a bridge).  FP8 Tensor Core 3,026 TFLOPS
    # with sparsity, so 1,513 dense.
    "h100-pcie": Accelerator("H100 PCIe", 2.0, 756.5, 80.0, 128.0, fp8_tflops=1513.0),
    # The same datasheet, H100 NVL column (per GPU): HBM3 3.9 TB/s, BF16 Tensor Core 1,671 TFLOPS with sparsity, so
    # 835.5 dense, 94 GB.
    # Link: NVLink 600 GB/s (the pair's bridge, same column).  FP8 Tensor Core 3,341 TFLOPS with sparsity, so
    # 1,670.5 dense.
    "h100-nvl": Accelerator("H100 NVL (94 GB)", 3.9, 835.5, 94.0, 600.0, fp8_tflops=1670.5),
    # NVIDIA RTX PRO 6000 Blackwell (GTC 2025 announcement, the same for its Workstation, Max-Q and Server editions):
    # 96 GB GDDR7 on 512 bits at 28 Gbps, 1,792 GB/s; 4,000 AI TOPS, an FP4 figure with sparsity, so 2,000 dense at
    # FP4 and 500 at FP16/BF16 (each precision step halves the tensor rate, the professional parts at full rate with
    # FP32 accumulation).
    # Link: PCIe 5.0 x16, 128 GB/s both ways (the card has no NVLink).  FP8: 1,000 dense, by the same halving.
    "rtx-pro-6000-blackwell": Accelerator("RTX PRO 6000 Blackwell", 1.792, 500.0, 96.0, 128.0, fp8_tflops=1000.0),
    # NVIDIA A40 datasheet: 48 GB GDDR6 with ECC, 696 GB/s, BF16 Tensor Core 149.7 TFLOPS (299.4 with sparsity).
    # Link: PCIe Gen4 64 GB/s (same datasheet; its 112.5 GB/s NVLink needs a bridge).
    # No FP8 tensor rate (Ampere): FP8 weights multiply at the BF16 rate.
    "a40": Accelerator("A40", 0.696, 149.7, 48.0, 64.0),
}

# Each preset's family: accelerators of one family share a memory system and an engine's kernels, so a stated
# error is about a family (app.model.cost.published.PointClass).
ACCELERATOR_FAMILIES: dict[str, str] = {
    "a100-80gb-sxm": "NVIDIA Ampere",
    "h100-sxm": "NVIDIA Hopper",
    "h200": "NVIDIA Hopper",
    "b200": "NVIDIA Blackwell",
    "mi300x": "AMD Instinct",
    "a100-40gb-sxm": "NVIDIA Ampere",
    "gb200": "NVIDIA Blackwell",
    "rtx-3090": "desktop GPU",
    "mi355x": "AMD Instinct",
    "rtx-3060-12gb": "desktop GPU",
    "radeon-ai-pro-r9700": "desktop GPU",
    "arc-pro-b70": "desktop GPU",
    "rtx-4090": "desktop GPU",
    "h100-pcie": "NVIDIA Hopper",
    "h100-nvl": "NVIDIA Hopper",
    "rtx-pro-6000-blackwell": "desktop GPU",
    "a40": "desktop GPU",
}

_SHAPES: dict[str, ModelSpec] = {
    # Llama 3.2 1B (Hugging Face config.json): 1.24B parameters, 16 layers, 32 query heads,
    # 8 KV heads, head dim 64.  Offered as a draft model.
    "dense-1b": ModelSpec("Dense 1B (Llama 3.2 1B)", 1.24, 1.24, 16, 32, 8, 64),
    # Llama 3.2 3B (config.json): 3.21B parameters, 28 layers, 24 query heads, 8 KV heads,
    # head dim 128.  Offered as a draft model.
    "dense-3b": ModelSpec("Dense 3B (Llama 3.2 3B)", 3.21, 3.21, 28, 24, 8, 128),
    # Llama 3.1 8B (Llama 3 Herd of Models, Table 3; config.json): 8.03B parameters,
    # 32 layers, 32 query heads, 8 KV heads, head dim 128.
    "dense-8b": ModelSpec("Dense 8B (Llama 3.1 8B)", 8.03, 8.03, 32, 32, 8, 128),
    # Llama 3.1 70B (same sources): 70.6B parameters, 80 layers, 64 query heads, 8 KV heads,
    # head dim 128.
    "dense-70b": ModelSpec("Dense 70B (Llama 3.1 70B)", 70.6, 70.6, 80, 64, 8, 128),
    # Llama 3.1 405B (same sources): 405.9B parameters, 126 layers, 128 query heads,
    # 8 KV heads, head dim 128.
    "dense-405b": ModelSpec("Dense 405B (Llama 3.1 405B)", 405.9, 405.9, 126, 128, 8, 128),
    # Mixtral 8x7B (Mixtral of Experts, Jiang et al. 2024; config.json): 46.7B total,
    # 12.9B active, 8 experts with 2 per token, 32 layers, 32 query heads, 8 KV heads,
    # head dim 128.
    "mixtral-8x7b": ModelSpec("Mixtral 8x7B", 46.7, 12.9, 32, 32, 8, 128, experts=8, experts_per_token=2),
    # DeepSeek-V3 technical report (DeepSeek-AI 2024) and config.json: 671B total, 37B active,
    # 61 layers, 128 query heads, 256 routed experts with 8 per token (plus one shared
    # expert, counted in the shared parameters), multi-head latent attention caching a
    # 512-wide latent plus a 64-wide rotary key per layer: one cached vector of 576.
    "deepseek-v3": ModelSpec(
        "DeepSeek-V3-class MoE",
        671.0,
        37.0,
        61,
        128,
        1,
        576,
        kv_tensors=1,
        experts=256,
        experts_per_token=8,
    ),
    # Llama 2 (Touvron et al. 2023, Table 1; config.json of Llama-2-7b-hf): 6.74B parameters, 32 layers, 32 query
    # heads and 32 KV heads (multi-head attention), head dim 128.  LLaMA-2-7B-32K (Together) has the same shape.
    "llama-2-7b": ModelSpec("Llama 2 7B", 6.74, 6.74, 32, 32, 32, 128),
    # TinyLlama-1.1B (Zhang et al. 2024, Table 1; config.json): 1.1B parameters, 22 layers, 32 query heads, 4 KV
    # heads, head dim 64.  Offered as a draft model.
    "tinyllama-1.1b": ModelSpec("TinyLlama 1.1B", 1.1, 1.1, 22, 32, 4, 64),
    # Qwen3-30B-A3B (Qwen3 technical report, Table 2; model card): 30.5B total, 3.3B active, 48 layers, 32 query
    # heads, 4 KV heads, head dim 128, 128 experts with 8 per token.
    "qwen3-30b-a3b": ModelSpec("Qwen3-30B-A3B", 30.5, 3.3, 48, 32, 4, 128, experts=128, experts_per_token=8),
    # Llama 4 Scout (Meta model card; config.json): 109B total, 17B active, 48 layers, 40 query heads, 8 KV heads,
    # head dim 128, 16 routed experts with 1 per token (and a shared expert, counted in the shared parameters).
    "llama-4-scout": ModelSpec("Llama 4 Scout 17B-16E", 109.0, 17.0, 48, 40, 8, 128, experts=16, experts_per_token=1),
    # Llama 4 Maverick (Meta model card: 400B total, 17B active, 128 experts; its text config as TensorRT-LLM's
    # tests/unittest/_torch/modeling/test_modeling_llama_min_latency.py at b35ac1b6 gives it, with its layers
    # "Reduced to 2 layers from 48 layers"): 48 layers, 40 query heads, 8 KV heads, head dim 128, 128 routed experts
    # with 1 per token in every other layer (the shared expert and the other layers' dense FFNs are counted in the
    # shared parameters).  Counted from those shapes: 400.7B.
    "llama-4-maverick": ModelSpec(
        "Llama 4 Maverick 17B-128E", 400.0, 17.0, 48, 40, 8, 128, experts=128, experts_per_token=1
    ),
    # Qwen3-8B (Qwen3 technical report, Table 1; config.json): 8.2B parameters, 36 layers, 32 query heads, 8 KV
    # heads, head dim 128.
    "qwen3-8b": ModelSpec("Qwen3-8B", 8.2, 8.2, 36, 32, 8, 128),
    # MiniMax-M2 (model card: 230B total, 10B active; config.json of M2, M2.1 and M2.7, one shape): 62 layers,
    # 48 query heads, 8 KV heads, head dim 128, 256 routed experts with 8 per token, no shared expert.
    "minimax-m2": ModelSpec("MiniMax-M2 (230B-A10B)", 230.0, 10.0, 62, 48, 8, 128, experts=256, experts_per_token=8),
    # Kimi K2, K2.5 and K2.6 (Moonshot's model card; config.json, DeepseekV3 architecture): 1T total, 32B active,
    # 61 layers (one dense), 64 query heads, multi-head latent attention caching a 512-wide latent and a 64-wide
    # rotary key (576), 384 routed experts with 8 per token and one shared expert.
    "kimi-k2": ModelSpec(
        "Kimi K2 (1T-A32B; K2.5, K2.6)", 1000.0, 32.0, 61, 64, 1, 576, kv_tensors=1, experts=384, experts_per_token=8
    ),
    # Qwen3.5-27B (model card: 27B, 64 layers, hidden 5120, "16 x (3 x (Gated DeltaNet -> FFN) -> 1 x (Gated
    # Attention -> FFN))"; 24 query heads, 4 KV heads of 256); Qwen3.6-27B and Qwen3.8-27B keep that architecture.
    # Only the 16 attention layers cache keys and values: 16 x 4 heads is entered as one KV head on each of the 64
    # layers, the same bytes per token; the DeltaNet layers' fixed state is not counted.
    "qwen3.6-27b": ModelSpec("Qwen3.5/3.6/3.8-27B (hybrid attention)", 27.0, 27.0, 64, 24, 1, 256),
    # Qwen3.5-397B-A17B (model card: 397B total, 17B activated, 60 layers, hidden 4096, "15 * (3 * (Gated DeltaNet ->
    # MoE) -> 1 * (Gated Attention -> MoE))"; 32 query heads and 2 KV heads of 256; 512 experts, "10 Routed + 1
    # Shared" activated).  Only the 15 attention layers cache keys and values and attend: their 15 x 2 heads of 256
    # are entered as one KV head of 128 on each of the 60 layers (the same bytes per token), and their 15 x 32 query
    # heads of 256 as 16 of 128 (the same attention FLOPs); the DeltaNet layers' fixed state is not counted.
    "qwen3.5-397b-a17b": ModelSpec(
        "Qwen3.5-397B-A17B (hybrid attention)",
        397.0,
        17.0,
        60,
        16,
        1,
        128,
        experts=512,
        experts_per_token=10,
        hidden=4096,
    ),
    # gpt-oss-120b (OpenAI's model card; config.json): 117B total, 5.1B active, 36 layers, 64 query heads, 8 KV
    # heads of 64, 128 experts with 4 per token; every other layer attends over a 128-token window, so 18 x 8
    # heads cache the whole context: entered as 4 KV heads on each of the 36 layers.
    "gpt-oss-120b": ModelSpec("gpt-oss-120b", 117.0, 5.1, 36, 64, 4, 64, experts=128, experts_per_token=4),
    # MiniCPM3-4B (openbmb's config.json; the defaults of transformers' configuration_minicpm3.py, "Defaults match
    # the openbmb/MiniCPM3-4B checkpoint"): 62 layers, hidden 2560, 40 query heads, multi-head latent attention
    # caching a 256-wide latent and a 32-wide rotary key (288), vocabulary 73,448 with tied embeddings.  Its
    # parameters, counted from those shapes (intermediate 6400, q_lora_rank 768), are 4.07B: the 8.15 GB of its
    # bf16 checkpoint.
    "minicpm3-4b": ModelSpec("MiniCPM3-4B", 4.07, 4.07, 62, 40, 1, 288, kv_tensors=1),
    # Qwen3 technical report (arXiv:2505.09388), Table 1, and the model cards: Qwen3-32B 32.8B parameters, 64 layers,
    # 64 query heads, 8 KV heads; Qwen3-4B 4.0B, 36 layers, 32 and 8 heads, tied embeddings; Qwen3-1.7B 1.7B,
    # 28 layers, 16 and 8 heads, tied embeddings; head dim 128 in each (config.json).  The two small ones are offered
    # as draft models.
    "qwen3-32b": ModelSpec("Qwen3-32B", 32.8, 32.8, 64, 64, 8, 128),
    "qwen3-4b": ModelSpec("Qwen3-4B", 4.0, 4.0, 36, 32, 8, 128),
    "qwen3-1.7b": ModelSpec("Qwen3-1.7B", 1.7, 1.7, 28, 16, 8, 128),
    # Qwen2.5-7B (Qwen's model card: "Number of Parameters: 7.61B", 28 layers, "28 for Q and 4 for KV"; config.json:
    # hidden 3584, so head dim 128, vocabulary 152,064, untied embeddings).
    "qwen2.5-7b": ModelSpec("Qwen2.5-7B", 7.61, 7.61, 28, 28, 4, 128),
}

# Vocabulary and hidden width of each target (config.json of each model): an EAGLE or MTP head's LM head
# and fusion layer are priced from them.
VOCABULARY_AND_HIDDEN: dict[str, tuple[int, int]] = {
    "dense-1b": (128_256, 2048),
    "dense-3b": (128_256, 3072),
    "dense-8b": (128_256, 4096),
    "dense-70b": (128_256, 8192),
    "dense-405b": (128_256, 16_384),
    "mixtral-8x7b": (32_000, 4096),
    "deepseek-v3": (129_280, 7168),
    "llama-2-7b": (32_000, 4096),
    "tinyllama-1.1b": (32_000, 2048),
    "qwen3-30b-a3b": (151_936, 2048),
    "llama-4-scout": (202_048, 5120),
    "llama-4-maverick": (202_048, 5120),
    "qwen3-8b": (151_936, 4096),
    "minimax-m2": (200_064, 3072),
    "kimi-k2": (163_840, 7168),
    "qwen3.6-27b": (248_320, 5120),
    "qwen3.5-397b-a17b": (248_320, 4096),
    "gpt-oss-120b": (201_088, 2880),
    "minicpm3-4b": (73_448, 2560),
    "qwen3-32b": (151_936, 5120),
    "qwen3-4b": (151_936, 2560),
    "qwen3-1.7b": (151_936, 2048),
    "qwen2.5-7b": (152_064, 3584),
}
MODELS: dict[str, ModelSpec] = {
    key: dataclasses.replace(shape, hidden=VOCABULARY_AND_HIDDEN[key][1]) for key, shape in _SHAPES.items()
}

# Drafts that are heads on the target rather than separate models: their cost follows from the target's shape.
# EAGLE (Li et al., ICML 2024) and EAGLE-3 (arXiv:2503.01840) run one decoder layer of the target's shape
# after a fusion layer over 2 (EAGLE) or 3 (EAGLE-3) of the target's hidden states; EAGLE reads the target's own
# LM head, EAGLE-3 its own over a 32,000-token draft vocabulary.  MTP (DeepSeek-V3 report, section 2.2) is one
# more layer of the target with a projection over 2 hidden states and the shared LM head.
EAGLE3_VOCABULARY = 32_000
# P-EAGLE: EAGLE-3's inputs (three of the target's hidden states) and draft vocabulary, with layers enough to draft
# all k tokens in one pass.  Amazon's published heads (huggingface.co/amazon/gpt-oss-120b-p-eagle and
# GPT-OSS-20B-P-EAGLE, model cards: "we trained a 4-layer P-EAGLE") have four.
P_EAGLE_LAYERS = 4


@dataclass(frozen=True)
class DraftHead:
    """A head on the target: ``layers`` layers of the target's shape after a fusion layer over ``hidden_states`` of
    its hidden states, and an LM head over ``vocabulary`` tokens (None: the target's).  A ``parallel`` head drafts
    all k tokens in one pass (RooflineSetup.parallel_draft)."""

    label: str
    hidden_states: int
    vocabulary: int | None = None
    layers: int = 1
    parallel: bool = False


DRAFT_HEADS: dict[str, DraftHead] = {
    "eagle": DraftHead("EAGLE head", 2),
    "eagle3": DraftHead("EAGLE-3 head", 3, EAGLE3_VOCABULARY),
    "mtp": DraftHead("MTP head", 2),
    "p-eagle": DraftHead("P-EAGLE head", 3, EAGLE3_VOCABULARY, P_EAGLE_LAYERS, parallel=True),
}
DRAFT_CHOICES: tuple[str, ...] = (*MODELS, *DRAFT_HEADS)


def draft_head(target: ModelSpec, kind: str, target_key: str) -> ModelSpec:
    """The head ``kind`` names (DRAFT_HEADS) on ``target``: its layers of the target's shape, the fusion layer and
    an LM head."""
    head = DRAFT_HEADS[kind]
    hidden = target.width
    vocabulary = head.vocabulary or VOCABULARY_AND_HIDDEN.get(target_key, (128_256, 0))[0]
    fusion = head.hidden_states * hidden * hidden
    params_b = head.layers * target.active_params_b / target.layers + (fusion + vocabulary * hidden) / 1e9
    return ModelSpec(
        f"{head.label} of {target.name}",
        params_b,
        params_b,
        head.layers,
        target.query_heads,
        target.kv_heads,
        target.head_dim,
        target.kv_tensors,
        hidden=hidden,
    )


def draft_preset(key: str, target_key: str, target: ModelSpec | None = None) -> ModelSpec:
    """The draft ``key`` names: a model preset, or a head on the target (``target`` when it was edited)."""
    if key in DRAFT_HEADS:
        return draft_head(target or MODELS[target_key], key, target_key)
    return MODELS[key]


ACCELERATOR_FIELDS: tuple[str, ...] = tuple(
    field.name for field in dataclasses.fields(Accelerator) if field.name != "name"
)
MODEL_FIELDS: tuple[str, ...] = tuple(field.name for field in dataclasses.fields(ModelSpec) if field.name != "name")

PresetT = TypeVar("PresetT", Accelerator, ModelSpec)


def device_preset(accelerator: Accelerator) -> str | None:
    """The preset whose device ``accelerator`` is: its figures but its name and its link (a bridge, or none for
    peer-to-peer, or a mesh of other links, changes how fast devices talk, not the device); None for a device
    given by figures of its own."""
    return next(
        (
            key
            for key, preset in ACCELERATORS.items()
            if preset
            == dataclasses.replace(accelerator, name=preset.name, link_gb_s=preset.link_gb_s, links=preset.links)
        ),
        None,
    )


def with_overrides(preset: PresetT, overrides: Mapping[str, Any]) -> PresetT:
    """A copy of the preset with the given fields replaced; None values are ignored."""
    changes = {name: value for name, value in overrides.items() if value is not None}
    unknown = set(changes) - {field.name for field in dataclasses.fields(preset)}
    if unknown:
        raise ValueError(f"unknown fields: {', '.join(sorted(unknown))}")
    return dataclasses.replace(preset, **changes)
