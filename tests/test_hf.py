"""Issue 16, Hugging Face encoders for text: the `hf-encoder` model kind and the `hf-text`
dataset kind fine-tune a tiny BERT-style encoder built here, offline (a WordPiece tokenizer
trained on the fixture text with `tokenizers`, both saved with `save_pretrained`): the
loss falls, evaluation tokenises as training did, and resume is exact.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import torch
from helpers import generate, run_in_project, train_errors, write_text

pytest.importorskip("transformers", reason="the generated project's hf extra")
pytestmark = pytest.mark.slow

PKG = "hf_proj"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def save_tiny_encoder(folder: Path, texts: list[str]) -> Path:
    """A WordPiece tokenizer trained on `texts` and an untrained 2-layer BERT of width 32,
    saved as a hub model would be."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    wordpiece = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    wordpiece.normalizer = normalizers.BertNormalizer(lowercase=True)
    wordpiece.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=120, special_tokens=SPECIALS)
    wordpiece.train_from_iterator(texts, trainer)
    ids = {token: SPECIALS.index(token) for token in ("[CLS]", "[SEP]")}
    wordpiece.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=list(ids.items())
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=wordpiece,
        **{f"{name}_token": f"[{name.upper()}]" for name in ("pad", "unk", "cls", "sep", "mask")},
    )
    tokenizer.save_pretrained(folder)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
    )
    BertModel(config).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hf")
    kinds = {"model": "hf-encoder", "dataset": "hf-text"}
    path = generate(
        root,
        name="hf-proj",
        task="sequence-classification",
        features=("finetune", "optim"),
        **kinds,
    )
    reviews = write_text(path / "reviews.tsv", rows=200)
    with reviews.open() as f:
        texts = [row["text"] for row in csv.DictReader(f, delimiter="\t")]
    save_tiny_encoder(path / "tiny-bert", texts)
    return path


# Fine-tunes in the project, straight and killed-then-resumed, and evaluates with a
# data.tokenizer that no longer exists (the checkpoint's tokenizer must be used).
FINE_TUNE = """
import csv, json

import torch

from hf_proj.config import load_config
from hf_proj.evaluate import evaluate_checkpoint
from hf_proj.train import fit

base = [
    "data.name=hf_text", "data.root=reviews.tsv", "data.tokenizer=tiny-bert",
    "model.pretrained=tiny-bert", "train.batch_size=16", "train.epochs=3", "train.lr=0.003",
    "train.warmup_steps=0", "train.device=cpu", "train.log_every=5",
]
straight = fit(load_config(overrides=[*base, "train.out_dir=runs/a"]))
fit(load_config(overrides=[*base, "train.out_dir=runs/b", "train.max_steps=15"]))
fit(load_config(overrides=[*base, "train.out_dir=runs/b", "train.resume=auto"]))
a = torch.load("runs/a/last.pt", weights_only=True)
b = torch.load("runs/b/last.pt", weights_only=True)
weights = a["model_state_dict"].items()
with open("runs/a/metrics.csv") as f:
    losses = [float(r["loss"]) for r in csv.DictReader(f) if r["split"] == "train"]
evaluated = evaluate_checkpoint("runs/a/last.pt", None, ["data.tokenizer=/nowhere"])
print(json.dumps({
    "straight": straight,
    "evaluated": evaluated,
    "losses": losses,
    "same_weights": all(torch.equal(v, b["model_state_dict"][k]) for k, v in weights),
    "steps": [a["step"], b["step"]],
    "data_state": a["data_state"],
}))
"""


def test_tiny_encoder_fine_tunes_evaluates_and_resumes_exactly(project: Path) -> None:
    result = run_in_project(project, "-c", FINE_TUNE)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = json.loads(result.stdout.splitlines()[-1])
    assert out["losses"][-1] < 0.8 * out["losses"][0], out["losses"]
    assert out["straight"]["accuracy"] > 0.8
    assert out["evaluated"]["accuracy"] == out["straight"]["accuracy"]
    assert out["evaluated"]["num_samples"] == 40
    assert out["steps"] == [30, 30] and out["same_weights"]
    assert out["data_state"] == {"tokenizer": "tiny-bert", "classes": ["neg", "pos"]}
    # predict tokenises new texts with the checkpoint's tokenizer and names the classes
    (project / "new.txt").write_text("a great lovely film\nawful and poor\n", encoding="utf-8")
    result = run_in_project(
        project, "-m", PKG, "predict", "--checkpoint", "runs/a/last.pt", "new.txt"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["row"] for r in records] == [1, 2] and {r["label"] for r in records} <= {"neg", "pos"}


def test_hf_settings_that_cannot_work_are_one_line(project: Path, tmp_path: Path) -> None:
    data = "data.name=hf_text data.root=reviews.tsv"
    cases = {
        f"model.pretrained={tmp_path / 'none'}": "model.pretrained",
        f"{data} data.tokenizer=": "data.tokenizer is empty",
        f"{data} data.tokenizer={tmp_path / 'none'}": "data.tokenizer",
        "model.pretrained=tiny-bert": "the data has 1000 token ids, the encoder 120",
    }
    said = train_errors(project, PKG, tmp_path / "r", *cases)
    for message, reason in zip(said, cases.values(), strict=True):
        assert reason in message


def test_fine_tunes_under_torchrun_with_a_frozen_embedding(project: Path) -> None:
    """Two gloo processes: DDP over the encoder (its unused pooler dropped, the frozen
    embeddings left out), one checkpoint that evaluates in a single process."""
    sets = [
        "data.root=reviews.tsv",
        "data.tokenizer=tiny-bert",
        "model.pretrained=tiny-bert",
        "model.freeze=encoder.embeddings",
        "train.head_lr_multiplier=10",
        "train.batch_size=8",
        "train.max_steps=4",
        "train.device=cpu",
        "train.out_dir=runs/ddp",
    ]
    options = [arg for item in sets for arg in ("--set", item)]
    torchrun = ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    result = run_in_project(project, *torchrun, "-m", PKG, "train", *options)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    checkpoint = torch.load(project / "runs/ddp/last.pt", weights_only=True)
    assert checkpoint["step"] == 4 and checkpoint["world_size"] == 2
    groups = checkpoint["optimizer_state_dict"]["param_groups"]
    assert [len(g["params"]) for g in groups] == [32, 2]  # encoder layers; the head
    report = run_in_project(project, "-m", PKG, "evaluate", "--checkpoint", "runs/ddp/last.pt")
    assert report.returncode == 0 and "num_samples 40" in report.stdout, report.stderr
