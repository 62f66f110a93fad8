"""A PyTorch program annotated as users annotate theirs, for the injection library (docs/profile.md).

Run it with NVTX_INJECTION64_PATH naming libxsp_inject.so and XSP_PROFILE_DIR a folder: the part it leaves holds
its NVTX ranges. torch.autograd.profiler.emit_nvtx(record_shapes=True) names every op's range as PyTorch's
getNvtxStr() writes it; the script's own "step" ranges wrap each iteration. Three inference steps, then one training
step (forward, backward: autograd's evaluate_function ranges with the forward ops' sequence numbers).
  python3 scripts/gpu/nvtx_torch.py
"""
import torch

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)).to(device)
x = torch.randn(8, 64, device=device)
with torch.no_grad():
    for _ in range(3):  # warm-up, outside emit_nvtx
        model(x)
if device == "cuda":
    torch.cuda.synchronize()
with torch.autograd.profiler.emit_nvtx(record_shapes=True):
    with torch.no_grad():
        for i in range(3):
            torch.cuda.nvtx.range_push("step")
            model(x)
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_push("train step")
    loss = model(x).square().mean()
    loss.backward()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
print("torch", torch.__version__, "device", device)
