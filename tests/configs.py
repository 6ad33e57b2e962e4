"""The attention layers the tests share (`harness.Config`s, small for the CPU)."""

from tokamax_softcap import harness

CAP = 10.0
# GQA (4 query heads share 2 kv heads), head_dim 64; packed documents and the
# window straddle the kernels' blocks.
GQA_64 = harness.Config(
    name="gqa-64",
    batch=2,
    seq_len=256,
    num_heads=4,
    num_kv_heads=2,
    head_dim=64,
    logits_soft_cap=CAP,
    window=96,
)
# MHA, head_dim 128 (a logits scale that is not a power of two), and a
# sequence that is a multiple of neither block (64 and 32) of the causal loops.
MHA_128_RAGGED = harness.Config(
    name="mha-128-ragged",
    batch=1,
    seq_len=176,
    num_heads=2,
    num_kv_heads=2,
    head_dim=128,
    logits_soft_cap=CAP,
    window=64,
)
# GQA at head_dim 512 (`test_wide_heads.py` varies it): two blocks of 64
# queries and keys, so the block loops and the causal diagonal run; the window
# straddles a block.
GQA_WIDE = harness.Config(
    name="gqa-wide",
    batch=1,
    seq_len=128,
    num_heads=2,
    num_kv_heads=1,
    head_dim=512,
    logits_soft_cap=CAP,
    window=48,
)
