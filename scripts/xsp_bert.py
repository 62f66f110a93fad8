"""A BERT-style encoder classifier (Devlin et al. 2019) in plain torch, scriptable with torch 1.13: token +
position + token-type (always type 0) embeddings, LayerNorm, n_layer post-LN encoder blocks (multi-head
self-attention, GELU feed-forward of 4 x hidden), pooler (first token, dense + tanh), classifier -> logits.
Attention is written out (matmul, masked softmax): torch 1.13 has no scaled_dot_product_attention.

The TorchScript contract (the C++ LibTorch predictor calls it):
  forward(input_ids [N, L] int64, attention_mask [N, L] int64) -> logits [N, num_labels] float32 (the parameters'
  dtype); L <= max_positions. attention_mask is 1 for tokens and 0 for padding: padded keys get an additive bias
  of -10000 before the softmax (BERT's own convention; exp underflows to exactly 0 in float32, and the value
  stays finite in float16, so a fully padded row gives no NaN), so a padded sequence classifies as it would alone.
  attributes n_layer, n_head, hidden, vocab_size, max_positions, num_labels (int).

Loaded by scripts/export_zoo.py (load_fixed) under the fixed file name "xsp_bert.py": TorchScript stores each
function's file name and line numbers in the saved file (its debug info), so compiling this file from its path
would make the .pt's bytes, and the checksum in the manifest, depend on where the repository is checked out.
"""

import math

import torch
from torch import Tensor, nn


class SelfAttention(nn.Module):
    def __init__(self, hidden: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.head_dim = hidden // n_head
        self.scale = 1.0 / math.sqrt(self.head_dim)
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.output = nn.Linear(hidden, hidden)

    def forward(self, x: Tensor, bias: Tensor) -> Tensor:
        # x [B, T, C]; bias [B, 1, 1, T] additive (0 for tokens, -10000 for padded keys).
        B, T, C = x.size(0), x.size(1), x.size(2)
        q = self.query(x).view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        k = self.key(x).view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        v = self.value(x).view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        att = torch.matmul(q, k.transpose(-2, -1)) * self.scale + bias  # [B, H, T, T]
        y = torch.matmul(torch.softmax(att, dim=-1), v)  # [B, H, T, D]
        return self.output(y.transpose(1, 2).reshape(B, T, C))


class EncoderLayer(nn.Module):
    def __init__(self, hidden: int, n_head: int):
        super().__init__()
        self.attention = SelfAttention(hidden, n_head)
        self.ln_1 = nn.LayerNorm(hidden, eps=1e-12)
        self.intermediate = nn.Linear(hidden, 4 * hidden)
        self.act = nn.GELU()
        self.ffn_output = nn.Linear(4 * hidden, hidden)
        self.ln_2 = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x: Tensor, bias: Tensor) -> Tensor:
        x = self.ln_1(x + self.attention(x, bias))  # post-LN, as BERT
        return self.ln_2(x + self.ffn_output(self.act(self.intermediate(x))))


class BertClassifier(nn.Module):
    def __init__(self, n_layer: int, hidden: int, n_head: int, vocab_size: int, max_positions: int,
                 num_labels: int):
        super().__init__()
        self.n_layer = n_layer
        self.n_head = n_head
        self.hidden = hidden
        self.vocab_size = vocab_size
        self.max_positions = max_positions
        self.num_labels = num_labels
        self.word_embeddings = nn.Embedding(vocab_size, hidden)
        self.position_embeddings = nn.Embedding(max_positions, hidden)
        self.token_type_embeddings = nn.Embedding(2, hidden)
        self.embeddings_ln = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList([EncoderLayer(hidden, n_head) for _ in range(n_layer)])
        self.pooler = nn.Linear(hidden, hidden)
        self.classifier = nn.Linear(hidden, num_labels)

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        if input_ids.dim() != 2 or input_ids.size(1) > self.max_positions or attention_mask.size() != input_ids.size():
            raise ValueError("forward: input_ids and attention_mask must both be [N, L], L <= max_positions")
        T = input_ids.size(1)
        pos = torch.arange(T, dtype=torch.long, device=input_ids.device)
        types = torch.zeros_like(input_ids)
        x = self.word_embeddings(input_ids) + self.position_embeddings(pos).unsqueeze(0) + \
            self.token_type_embeddings(types)
        x = self.embeddings_ln(x)
        w = self.word_embeddings.weight
        bias = (1.0 - attention_mask.to(w.dtype)) * -10000.0
        bias = bias[:, None, None, :]
        for layer in self.layers:
            x = layer(x, bias)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return self.classifier(pooled)


def build(cfg: dict) -> nn.Module:
    """BertClassifier(**cfg) with BERT's initialization from torch.manual_seed(0), in eval mode: Linear and
    Embedding weights N(0, 0.02), biases 0, LayerNorm 1/0."""
    torch.manual_seed(0)
    model = BertClassifier(**cfg)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                m.weight.normal_(0.0, 0.02)
                if isinstance(m, nn.Linear) and m.bias is not None:
                    m.bias.zero_()
            elif isinstance(m, nn.LayerNorm):
                m.weight.fill_(1.0)
                m.bias.zero_()
    return model.eval()
