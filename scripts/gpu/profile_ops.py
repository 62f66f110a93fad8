"""Framework ops of a PyTorch program as `xsp profile` sees them and as torch.profiler sees them (docs/profile.md).

Eager ResNet-50 (torchvision) or BERT-base (transformers, from its config: random weights, no download), batch 8 on
the GPU, 3 warm-up steps outside any tool, then STEPS steps, each in a range "step":
  python3 scripts/gpu/profile_ops.py MODEL nvtx    # under emit_nvtx(record_shapes=True): run it with the injection
                                                  # library (xsp profile, or NVTX_INJECTION64_PATH + XSP_PROFILE_DIR)
  python3 scripts/gpu/profile_ops.py MODEL torch   # under torch.profiler (CPU ops): prints {"op name": count} of the
                                                  # ops inside the steps, as JSON
Both count every op RecordFunction reports (nested ones included); tests/unit/profile compares the two.
"""
import json
import sys

import torch

STEPS = 3


def model_and_input(name, device):
    torch.manual_seed(0)
    if name == "resnet50":
        import torchvision

        return torchvision.models.resnet50().eval().to(device), (torch.randn(8, 3, 224, 224, device=device),)
    if name == "bert":
        import transformers

        config = transformers.BertConfig()
        model = transformers.BertModel(config).eval().to(device)
        ids = torch.randint(0, config.vocab_size, (8, 128), device=device)
        return model, (ids,)
    raise SystemExit(f"unknown model {name!r}: expected resnet50 or bert")


def main():
    name, mode = sys.argv[1], sys.argv[2]
    device = "cuda"
    model, inputs = model_and_input(name, device)
    with torch.no_grad():
        for _ in range(3):
            model(*inputs)
    torch.cuda.synchronize()
    if mode == "nvtx":
        with torch.autograd.profiler.emit_nvtx(record_shapes=True), torch.no_grad():
            for _ in range(STEPS):
                torch.cuda.nvtx.range_push("step")
                model(*inputs)
                torch.cuda.synchronize()
                torch.cuda.nvtx.range_pop()
        print(f"{name}: {STEPS} steps under emit_nvtx", file=sys.stderr)
        return
    if mode != "torch":
        raise SystemExit(f"unknown mode {mode!r}: expected nvtx or torch")
    from torch.profiler import ProfilerActivity, profile, record_function

    with profile(activities=[ProfilerActivity.CPU]) as prof, torch.no_grad():
        for _ in range(STEPS):
            with record_function("step"):
                model(*inputs)
                torch.cuda.synchronize()
    steps = [e for e in prof.events() if e.name == "step"]
    counts = {}
    for e in prof.events():
        if e.name == "step" or e.device_type != torch.autograd.DeviceType.CPU:
            continue
        start = e.time_range.start
        if not any(s.time_range.start <= start <= s.time_range.end for s in steps):
            continue
        counts[e.name] = counts.get(e.name, 0) + 1
    json.dump({"model": name, "steps": STEPS, "torch": torch.__version__, "ops": counts}, sys.stdout, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
