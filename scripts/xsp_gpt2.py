"""GPT-2 (Radford et al. 2019; the layout of OpenAI's checkpoint and Hugging Face's GPT2LMHeadModel) in plain
torch, scriptable with torch 1.13, with a KV cache. Module names as GPT-2's: transformer.wte, transformer.wpe,
transformer.h.<i>.{ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj}, transformer.ln_f, lm_head
(tied to wte). Attention is written out (matmul, masked softmax): torch 1.13 has no
scaled_dot_product_attention, and the file must run in newer LibTorch too.

The TorchScript contract (the C++ LibTorch generator calls it):
  attributes n_layer, n_head, head_dim, vocab_size, max_positions (int);
  init_cache(batch, length) -> (K, V), zeros [n_layer, batch, n_head, length, head_dim], dtype and device of
    the parameters;
  prefill(input_ids [B, T] int64, K, V) -> logits [B, vocab] of the last position; writes positions 0..T-1;
  decode(token [B, 1] int64, position, K, V) -> logits [B, vocab]; writes `position`, attends over 0..position;
  decode_static(token [B, 1] int64, position [1] int64 tensor, K, V) -> logits [B, vocab]: decode with the position
    on the device and every tensor shape fixed by (B, cache length): attends over the whole cache with positions
    past `position` masked, so that a CUDA graph captured once per (B, length) replays every step (issue 25);
  forward(input_ids [B, T]) -> logits [B, T, vocab], no cache.

Loaded by scripts/export_zoo.py (gpt2_module) under the fixed file name "xsp_gpt2.py": TorchScript stores each
function's file name and line numbers in the saved file (its debug info), so compiling this file from its path
would make the .pt's bytes, and the checksum in the manifest, depend on where the repository is checked out.
"""

import math
from typing import Optional, Tuple

import torch
from torch import Tensor, nn


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.head_dim = n_embd // n_head
        self.scale = 1.0 / math.sqrt(self.head_dim)
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x: Tensor, k_cache: Optional[Tensor], v_cache: Optional[Tensor], start: int) -> Tensor:
        # x [B, T, C]; k_cache/v_cache this layer's [B, H, L, D] (written in place at start..start+T-1).
        B, T, C = x.size(0), x.size(1), x.size(2)
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        k = k.view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        v = v.view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        if k_cache is not None and v_cache is not None:
            k_cache[:, :, start:start + T] = k
            v_cache[:, :, start:start + T] = v
            k = k_cache[:, :, :start + T]
            v = v_cache[:, :, :start + T]
        att = torch.matmul(q, k.transpose(-2, -1)) * self.scale  # [B, H, T, S]
        if T > 1:  # query i (position start + i) sees keys 0 .. start + i
            S = k.size(2)
            causal = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(start)
            att = att.masked_fill(causal.logical_not(), float("-inf"))
        y = torch.matmul(torch.softmax(att, dim=-1), v)  # [B, H, T, D]
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))

    def forward_static(self, x: Tensor, k_cache: Tensor, v_cache: Tensor, position: Tensor) -> Tensor:
        # One token: x [B, 1, C]; position [1] int64 on the device. Written with index_copy_ and attending over the
        # whole cache under a mask, so that no shape or host value depends on the position.
        B, C = x.size(0), x.size(2)
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, 1, self.n_head, self.head_dim).transpose(1, 2)
        k = k.view(B, 1, self.n_head, self.head_dim).transpose(1, 2)
        v = v.view(B, 1, self.n_head, self.head_dim).transpose(1, 2)
        k_cache.index_copy_(2, position, k)
        v_cache.index_copy_(2, position, v)
        att = torch.matmul(q, k_cache.transpose(-2, -1)) * self.scale  # [B, H, 1, L]
        later = torch.arange(k_cache.size(2), device=x.device) > position
        att = att.masked_fill(later, float("-inf"))
        y = torch.matmul(torch.softmax(att, dim=-1), v_cache)  # [B, H, 1, D]
        return self.c_proj(y.transpose(1, 2).reshape(B, 1, C))

class MLP(nn.Module):
    def __init__(self, n_embd: int):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.act = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x: Tensor) -> Tensor:
        return self.c_proj(self.act(self.c_fc(x)))

class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = MLP(n_embd)

    def forward(self, x: Tensor, k_cache: Optional[Tensor], v_cache: Optional[Tensor], start: int) -> Tensor:
        x = x + self.attn(self.ln_1(x), k_cache, v_cache, start)
        return x + self.mlp(self.ln_2(x))

    def forward_static(self, x: Tensor, k_cache: Tensor, v_cache: Tensor, position: Tensor) -> Tensor:
        x = x + self.attn.forward_static(self.ln_1(x), k_cache, v_cache, position)
        return x + self.mlp(self.ln_2(x))

class Transformer(nn.Module):
    def __init__(self, n_layer: int, n_embd: int, n_head: int, vocab_size: int, max_positions: int):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(max_positions, n_embd)
        self.h = nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)

    def forward(self, input_ids: Tensor, start: int, k_cache: Optional[Tensor],
                v_cache: Optional[Tensor]) -> Tensor:
        pos = torch.arange(start, start + input_ids.size(1), dtype=torch.long, device=input_ids.device)
        x = self.wte(input_ids) + self.wpe(pos).unsqueeze(0)
        for i, block in enumerate(self.h):
            if k_cache is not None and v_cache is not None:
                x = block(x, k_cache[i], v_cache[i], start)
            else:
                x = block(x, None, None, start)
        return x

    def forward_static(self, token: Tensor, position: Tensor, k_cache: Tensor, v_cache: Tensor) -> Tensor:
        x = self.wte(token) + self.wpe(position).unsqueeze(0)
        for i, block in enumerate(self.h):
            x = block.forward_static(x, k_cache[i], v_cache[i], position)
        return x

class GPT2(nn.Module):
    def __init__(self, n_layer: int, n_embd: int, n_head: int, vocab_size: int, max_positions: int):
        super().__init__()
        self.n_layer = n_layer
        self.n_head = n_head
        self.head_dim = n_embd // n_head
        self.vocab_size = vocab_size
        self.max_positions = max_positions
        self.transformer = Transformer(n_layer, n_embd, n_head, vocab_size, max_positions)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied, as GPT-2

    @torch.jit.export
    def init_cache(self, batch: int, length: int) -> Tuple[Tensor, Tensor]:
        if batch < 1 or length < 1 or length > self.max_positions:
            raise ValueError("init_cache: batch must be >= 1 and length in [1, max_positions]")
        w = self.transformer.wte.weight
        shape = [self.n_layer, batch, self.n_head, length, self.head_dim]
        return (torch.zeros(shape, dtype=w.dtype, device=w.device),
                torch.zeros(shape, dtype=w.dtype, device=w.device))

    @torch.jit.export
    def prefill(self, input_ids: Tensor, k_cache: Tensor, v_cache: Tensor) -> Tensor:
        if input_ids.size(1) < 1 or input_ids.size(1) > k_cache.size(3):
            raise ValueError("prefill: the prompt is empty or longer than the cache")
        x = self.transformer(input_ids, 0, k_cache, v_cache)
        return self.lm_head(self.transformer.ln_f(x[:, -1, :]))

    @torch.jit.export
    def decode(self, token: Tensor, position: int, k_cache: Tensor, v_cache: Tensor) -> Tensor:
        if token.size(1) != 1 or position < 0 or position >= k_cache.size(3):
            raise ValueError("decode: token must be [B, 1] and position inside the cache")
        x = self.transformer(token, position, k_cache, v_cache)
        return self.lm_head(self.transformer.ln_f(x[:, -1, :]))

    @torch.jit.export
    def decode_static(self, token: Tensor, position: Tensor, k_cache: Tensor, v_cache: Tensor) -> Tensor:
        # No check of the position's value: reading it would synchronize with the device (and break a capture).
        if token.size(1) != 1 or position.numel() != 1:
            raise ValueError("decode_static: token must be [B, 1] and position one int64")
        x = self.transformer.forward_static(token, position, k_cache, v_cache)
        return self.lm_head(self.transformer.ln_f(x[:, -1, :]))

    def forward(self, input_ids: Tensor) -> Tensor:
        if input_ids.size(1) > self.max_positions:
            raise ValueError("forward: more tokens than max_positions")
        return self.lm_head(self.transformer.ln_f(self.transformer(input_ids, 0, None, None)))


def build(cfg: dict) -> nn.Module:
    """GPT2(**cfg) with GPT-2's initialization from torch.manual_seed(0), in eval mode."""
    torch.manual_seed(0)
    model = GPT2(**cfg)
    # GPT-2's initialization: Linear and Embedding weights N(0, 0.02), biases 0, LayerNorm 1/0, and the residual
    # projections (attn.c_proj, mlp.c_proj) scaled by 1/sqrt(2 n_layer) (GPT-2 paper §2.3).
    with torch.no_grad():
        for name, m in model.named_modules():
            if isinstance(m, (nn.Linear, nn.Embedding)) and m is not model.lm_head:
                std = 0.02 / math.sqrt(2 * cfg["n_layer"]) if name.endswith("c_proj") else 0.02
                m.weight.normal_(0.0, std)
                if isinstance(m, nn.Linear) and m.bias is not None:
                    m.bias.zero_()
    return model.eval()
