"""Trains a small Gemma-2-style attention stack with the soft-capped Triton VJP.

Gemma 2's attention (arXiv:2408.00118): grouped-query attention, logits soft
cap `attn_logit_softcapping = 50`, query scale `1/sqrt(head_dim)`, and layers
that alternate global causal attention with a causal sliding window (4096).
This model is embeddings, then such attention layers (pre-RMSNorm, residual,
a gated-GELU MLP), then tied logits; it trains with optax's AdamW on random
tokens, once through tokamax's XLA attention and once through ours (the
`"triton"` implementation `tokamax_softcap` registers), from the same
initial parameters, and prints both loss curves and how far the final
parameters are apart.

    python examples/gemma2_attention.py            # GPU size (Gemma-2 2B heads)
    python examples/gemma2_attention.py --tiny     # seconds on a CPU

Without a GPU it runs the kernels in Pallas interpret mode. At the GPU size,
as in real Gemma 2 training, freshly initialized logits (~N(0, 1)) stay far
below the cap of 50; the tiny size lowers the cap so that it bends them.
Gemma 2 27B scales queries by 1/sqrt(144), not 1/sqrt(head_dim).
"""

import argparse
import dataclasses
import time

from flax import linen as nn
import jax
import jax.numpy as jnp
import optax
import tokamax
import tokamax_softcap  # pylint: disable=unused-import  # Registers "triton".
from tokamax_softcap import interpret
from tokamax_softcap import reference


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config:
  """Model and training sizes."""

  vocab: int = 256
  width: int = 2304
  num_layers: int = 2
  num_heads: int = 8
  num_kv_heads: int = 4
  head_dim: int = 256
  logits_soft_cap: float = 50.0
  window: int = 4096
  seq_len: int = 8192
  batch: int = 1
  steps: int = 5
  learning_rate: float = 1e-3
  dtype: str = "bfloat16"


# Small enough for the Pallas interpreter; the cap is lowered with the sizes so
# that randomly initialized logits still reach it (their largest is ~5).
TINY = Config(
    vocab=64,
    width=64,
    num_layers=2,
    num_heads=4,
    num_kv_heads=2,
    head_dim=32,
    logits_soft_cap=0.5,
    window=32,
    seq_len=128,
    batch=2,
    steps=3,
    dtype="float32",
)


class Attention(nn.Module):
  """Gemma-2 attention: GQA, soft-capped logits, optional sliding window."""

  config: Config
  local: bool
  implementation: str

  @nn.compact
  def __call__(self, x: jax.Array) -> jax.Array:
    c = self.config
    dense = lambda n, name: nn.DenseGeneral(
        (n, c.head_dim), use_bias=False, dtype=x.dtype, name=name
    )
    q = dense(c.num_heads, "q")(x)
    k = dense(c.num_kv_heads, "k")(x)
    v = dense(c.num_kv_heads, "v")(x)
    out = tokamax.dot_product_attention(
        q,
        k,
        v,
        is_causal=True,
        local_window_size=(c.window - 1, 0) if self.local else None,
        logits_soft_cap=c.logits_soft_cap,
        implementation=self.implementation,
    )
    return nn.DenseGeneral(
        c.width, axis=(-2, -1), use_bias=False, dtype=x.dtype, name="o"
    )(out)


class Block(nn.Module):
  config: Config
  local: bool
  implementation: str

  @nn.compact
  def __call__(self, x: jax.Array) -> jax.Array:
    c = self.config
    # In the model's dtype: flax's RMSNorm computes in f32 and would otherwise
    # return f32, promoting the attention inputs.
    norm = lambda y: nn.RMSNorm(dtype=y.dtype)(y)
    x = x + Attention(c, self.local, self.implementation)(norm(x))
    h = norm(x)
    gate = nn.Dense(2 * c.width, use_bias=False, dtype=x.dtype)(h)
    up = nn.Dense(2 * c.width, use_bias=False, dtype=x.dtype)(h)
    return x + nn.Dense(c.width, use_bias=False, dtype=x.dtype)(
        nn.gelu(gate) * up
    )


class Model(nn.Module):
  config: Config
  implementation: str

  @nn.compact
  def __call__(self, tokens: jax.Array) -> jax.Array:
    c = self.config
    embed = nn.Embed(c.vocab, c.width, dtype=jnp.dtype(c.dtype))
    x = embed(tokens)
    for i in range(c.num_layers):
      # Gemma 2 alternates local (sliding window) and global layers.
      x = Block(c, local=i % 2 == 0, implementation=self.implementation)(x)
    return embed.attend(nn.RMSNorm(dtype=x.dtype)(x)).astype(jnp.float32)


def train(
    config: Config, implementation: str, seed: int = 0
) -> tuple[list[float], dict, list[float]]:
  """Trains from a fixed initialization.

  Args:
    config: Sizes.
    implementation: tokamax's attention implementation, `"xla"` or `"triton"`.
    seed: For the parameters and the tokens (the same for every
      implementation).

  Returns:
    The loss of each step, the final parameters, and each step's wall time in
    seconds (the first includes compilation; reading the loss synchronises).
  """
  model = Model(config, implementation)
  keys = jax.random.split(jax.random.PRNGKey(seed), 2)
  tokens = jax.random.randint(
      keys[0], (config.batch, config.seq_len + 1), 0, config.vocab
  )
  inputs, targets = tokens[:, :-1], tokens[:, 1:]
  params = model.init(keys[1], inputs)
  optimizer = optax.adamw(config.learning_rate)
  state = optimizer.init(params)

  def loss_fn(params):
    logits = model.apply(params, inputs)
    return optax.softmax_cross_entropy_with_integer_labels(
        logits, targets
    ).mean()

  @jax.jit
  def step(params, state):
    loss, grads = jax.value_and_grad(loss_fn)(params)
    updates, state = optimizer.update(grads, state, params)
    return optax.apply_updates(params, updates), state, loss

  losses, seconds = [], []
  for _ in range(config.steps):
    start = time.perf_counter()
    params, state, loss = step(params, state)
    losses.append(float(loss))
    seconds.append(time.perf_counter() - start)
  return losses, params, seconds


def max_logit(config: Config, seed: int = 0) -> float:
  """Returns the largest pre-cap |logit| of the first layer at init."""
  model = Model(config, "xla")
  keys = jax.random.split(jax.random.PRNGKey(seed), 2)
  tokens = jax.random.randint(
      keys[0], (config.batch, config.seq_len), 0, config.vocab
  )
  params = model.init(keys[1], tokens)
  _, state = model.apply(
      params, tokens, capture_intermediates=True, mutable=["intermediates"]
  )
  attention = state["intermediates"]["Block_0"]["Attention_0"]
  q, k = (attention[name]["__call__"][0] for name in ("q", "k"))
  return float(jnp.max(jnp.abs(reference.logits(q, k))))


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--tiny", action="store_true", help="CPU-sized run")
  parser.add_argument("--steps", type=int, help="override the step count")
  args = parser.parse_args()
  config = TINY if args.tiny else Config()
  if args.steps:
    config = dataclasses.replace(config, steps=args.steps)
  print(config)
  print(
      f"largest pre-cap logit at init: {max_logit(config):.1f}"
      f" (cap {config.logits_soft_cap})"
  )
  with interpret.if_needed():
    results = {}
    for implementation in ("xla", "triton"):
      losses, params, seconds = train(config, implementation)
      results[implementation] = (losses, params)
      steady = sorted(seconds[1:])
      median = f"{1e3 * steady[len(steady) // 2]:.1f} ms" if steady else "-"
      print(
          f"{implementation}: losses {losses}; first step (with compilation)"
          f" {seconds[0]:.1f} s, median of the other {len(steady)}: {median}"
      )
  diff = jax.tree.map(
      lambda a, b: float(jnp.max(jnp.abs(a.astype(jnp.float32) - b))),
      results["xla"][1],
      results["triton"][1],
  )
  print(f"max |param difference|: {max(jax.tree.leaves(diff)):.2e}")


if __name__ == "__main__":
  main()
