#!/usr/bin/env python3
"""ONNX exports of XSP's bert_tiny text classifier for the ONNX Runtime predictor (issue 26), each with the logits
torch computes for a fixed input written beside it, so that XSP's outputs can be compared with torch's.

The model is scripts/xsp_bert.py's BertClassifier as scripts/export_zoo.py builds bert_tiny (2 layers, 64 wide,
2 heads, vocabulary 2000, 128 positions, one label per line of models/license_labels.txt; BERT's initialization from
torch.manual_seed(0), random weights), so its weights are those of the zoo's bert_tiny.pt. Written to --out:
  bert_tiny.onnx              inputs input_ids, attention_mask [batch, sequence] int64 -> logits [batch, labels]
                              float32: the zoo's forward, for models/bert_tiny.yaml (its sha256 is printed);
  bert_tiny_token_types.onnx  inputs input_ids, attention_mask, token_type_ids [batch, sequence] int64 -> logits:
                              the same weights, the token types taken from the input instead of zeros;
  <stem>.reference.json       {"model", "torch", "exporter", "opset", "tolerance", "inputs": [{"name",
                              "element_type", "shape", "data"}], "outputs": [{"name", "shape", "data"}]}: a batch of
                              2 rows of 64 tokens (the second padded after 40), and torch's logits for it.
Batch and sequence axes are dynamic. Exported with torch.onnx.export at opset 17, the TorchScript-based exporter
(dynamo=False) where this torch has it, else the dynamo exporter (the file says which). Checks, each failing the
script: the graph's input and output names and types (onnx.checker too when the onnx package is there); with the
onnxruntime package, ONNX Runtime's logits on CPU (and on CUDA when it has the provider and a GPU) equal torch's
within 1e-4, for the batch and for its first row alone.

Then, in a build with ONNX Runtime (docs/tasks.md "What runs where"):
    python3 scripts/gpu/onnx_export.py --out /tmp/ort-models
    XSP_ORT_TEST_MODEL=/tmp/ort-models/bert_tiny_token_types.onnx [XSP_ORT_TEST_DEVICE=cuda] \\
        build/tests/xsp_test_onnxruntime --gtest_filter='OnnxRuntimeExportedModel.*'
Needs torch; onnx and onnxruntime only for the checks they do.
"""

import argparse
import hashlib
import importlib.util
import inspect
import json
import sys
from pathlib import Path

import torch
from torch import Tensor, nn

REPO = Path(__file__).resolve().parent.parent.parent
BERT_TINY = dict(n_layer=2, hidden=64, n_head=2, vocab_size=2000, max_positions=128)  # scripts/export_zoo.py's
OPSET = 17
TOLERANCE = 1e-4
SEQUENCE = 64  # models/bert_tiny.yaml's pad_truncate.length
PAD_ID = 3


def load_bert_module():
    spec = importlib.util.spec_from_file_location("xsp_bert", REPO / "scripts" / "xsp_bert.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class OnnxBert(nn.Module):
    """BertClassifier.forward (scripts/xsp_bert.py) on the classifier's own modules, without its argument check
    (a Python branch on the sequence length, which the exporters would freeze or turn into a guard), and with the
    token types as an input when `token_types`."""

    def __init__(self, bert: nn.Module, token_types: bool):
        super().__init__()
        self.bert = bert
        self.token_types = token_types

    def forward(self, input_ids: Tensor, attention_mask: Tensor, token_type_ids: Tensor = None) -> Tensor:
        b = self.bert
        pos = torch.arange(input_ids.size(1), dtype=torch.long, device=input_ids.device)
        types = token_type_ids if self.token_types else torch.zeros_like(input_ids)
        x = b.word_embeddings(input_ids) + b.position_embeddings(pos).unsqueeze(0) + b.token_type_embeddings(types)
        x = b.embeddings_ln(x)
        bias = (1.0 - attention_mask.to(b.word_embeddings.weight.dtype)) * -10000.0
        bias = bias[:, None, None, :]
        for layer in b.layers:
            x = layer(x, bias)
        return b.classifier(torch.tanh(b.pooler(x[:, 0])))


def fixed_inputs(token_types: bool) -> dict:
    """Two rows of SEQUENCE tokens: the first full, the second 40 tokens then padding (mask 0, pad id 3); token
    types 1 on the second row's tokens 20..39."""
    gen = torch.Generator().manual_seed(0)
    ids = torch.full((2, SEQUENCE), PAD_ID, dtype=torch.long)
    mask = torch.zeros(2, SEQUENCE, dtype=torch.long)
    for row, n in enumerate([SEQUENCE, 40]):
        ids[row, :n] = torch.randint(4, BERT_TINY["vocab_size"], (n,), generator=gen)
        ids[row, 0] = 1  # <s>
        mask[row, :n] = 1
    inputs = {"input_ids": ids, "attention_mask": mask}
    if token_types:
        types = torch.zeros(2, SEQUENCE, dtype=torch.long)
        types[1, 20:40] = 1
        inputs["token_type_ids"] = types
    return inputs


def export(model: nn.Module, inputs: dict, path: Path, dynamo: bool) -> str:
    """torch.onnx.export at opset 17 with dynamic batch and sequence axes; returns the exporter used."""
    names = list(inputs)
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    axes["logits"] = {0: "batch"}
    kwargs = dict(input_names=names, output_names=["logits"], opset_version=OPSET, dynamic_axes=axes,
                  do_constant_folding=True)
    has_dynamo = "dynamo" in inspect.signature(torch.onnx.export).parameters
    if not dynamo:
        try:
            if has_dynamo:
                kwargs["dynamo"] = False
            torch.onnx.export(model, tuple(inputs.values()), str(path), **kwargs)
            return "torch.onnx.export (TorchScript-based, dynamo=False)"
        except Exception as e:  # noqa: BLE001 - a torch without the TorchScript-based exporter: try dynamo
            if not has_dynamo:
                raise
            print(f"onnx_export: the TorchScript-based exporter failed ({type(e).__name__}: {e}); trying dynamo=True",
                  file=sys.stderr)
    if not has_dynamo:
        sys.exit("onnx_export: this torch has no dynamo exporter (torch.onnx.export(dynamo=True))")
    kwargs["dynamo"] = True
    torch.onnx.export(model, tuple(inputs.values()), str(path), **kwargs)
    return "torch.onnx.export (dynamo=True)"


def check_graph(path: Path, names: list) -> None:
    """The graph's inputs are `names` in order, int64 [batch, sequence]; its one output logits, float32."""
    try:
        import onnx
    except ImportError:
        print("onnx_export: no onnx package: graph checks skipped", file=sys.stderr)
        return
    m = onnx.load(str(path))
    onnx.checker.check_model(m)
    initializers = {t.name for t in m.graph.initializer}
    graph_inputs = [(i.name, i.type.tensor_type.elem_type) for i in m.graph.input if i.name not in initializers]
    want = [(n, onnx.TensorProto.INT64) for n in names]
    if graph_inputs != want:
        sys.exit(f"onnx_export: {path.name}: graph inputs {graph_inputs}, expected {want}")
    outputs = [(o.name, o.type.tensor_type.elem_type) for o in m.graph.output]
    if outputs != [("logits", onnx.TensorProto.FLOAT)]:
        sys.exit(f"onnx_export: {path.name}: graph outputs {outputs}, expected logits float32")


def check_onnxruntime(path: Path, inputs: dict, logits: Tensor) -> None:
    """ONNX Runtime's logits (CPU, and CUDA where the package has the provider) equal torch's within TOLERANCE, for
    the batch and for its first row alone (the batch axis is dynamic)."""
    try:
        import onnxruntime as ort
    except ImportError:
        print("onnx_export: no onnxruntime package: ONNX Runtime check skipped", file=sys.stderr)
        return
    providers = ["CPUExecutionProvider"]
    if "CUDAExecutionProvider" in ort.get_available_providers() and torch.cuda.is_available():
        providers.insert(0, "CUDAExecutionProvider")
    for provider in providers:
        session = ort.InferenceSession(str(path), providers=[provider])
        feeds = {n: t.numpy() for n, t in inputs.items()}
        for rows in (2, 1):
            got = session.run(["logits"], {n: v[:rows] for n, v in feeds.items()})[0]
            worst = float((torch.from_numpy(got) - logits[:rows]).abs().max())
            if worst >= TOLERANCE:
                sys.exit(f"onnx_export: {path.name}: ONNX Runtime {ort.__version__} ({provider}, batch {rows}) "
                         f"differs from torch by {worst:.3g}")
            print(f"  {path.name}: ONNX Runtime {ort.__version__} {provider} batch {rows}: max |ORT - torch| "
                  f"{worst:.3g}", file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="output folder")
    ap.add_argument("--dynamo", action="store_true", help="use the dynamo exporter even where dynamo=False works")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    labels = (REPO / "models" / "license_labels.txt").read_text().splitlines()
    bert = load_bert_module().build(dict(BERT_TINY, num_labels=len(labels)))
    for stem, token_types in (("bert_tiny", False), ("bert_tiny_token_types", True)):
        model = OnnxBert(bert, token_types).eval()
        inputs = fixed_inputs(token_types)
        with torch.inference_mode():
            logits = model(*inputs.values())
            # Without token types the wrapper must be the zoo's forward itself.
            same = bert(inputs["input_ids"], inputs["attention_mask"])
        if not token_types and not torch.equal(logits, same):
            sys.exit("onnx_export: the wrapper's logits differ from BertClassifier.forward's")
        path = args.out / f"{stem}.onnx"
        exporter = export(model, inputs, path, args.dynamo)
        check_graph(path, list(inputs))
        check_onnxruntime(path, inputs, logits)
        reference = {
            "model": path.name,
            "torch": torch.__version__,
            "exporter": exporter,
            "opset": OPSET,
            "tolerance": TOLERANCE,
            "inputs": [{"name": n, "element_type": "int64", "shape": list(t.shape), "data": t.flatten().tolist()}
                       for n, t in inputs.items()],
            "outputs": [{"name": "logits", "shape": list(logits.shape), "data": logits.flatten().tolist()}],
        }
        (args.out / f"{stem}.reference.json").write_text(json.dumps(reference) + "\n")
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        print(f"{path}: {', '.join(inputs)} -> logits {list(logits.shape)}; {exporter}; sha256:{digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
