"""Text transfer with the `hf-encoder` kind: an encoder pretrained on the corpus's own
unlabelled text (masked language modelling) against the same encoder untrained.

    PYTHONPATH=src python bench/bench_hf_pretrain.py [--out-dir DIR] [--json PATH]

Data: four categories of Debian's `fortunes` (bench/real_data.py; apt-get install
fortunes), split 80/20 once (seed 0) into root/train.tsv and root/val.tsv. A WordPiece
tokenizer (vocabulary 4000) is trained on the training texts, and a BERT of width 64,
2 layers, 2 heads is saved twice with `save_pretrained`: untrained, and after
`--mlm-epochs` of masked language modelling on the training texts (labels unused).
A sequence-classification project with the `hf-encoder` and `hf-text` kinds then
fine-tunes each at the project's defaults (10 epochs, batch 32, AdamW lr 0.001, cosine,
data.max_length 64), side by side over the same seeds, scored by `evaluate` on last.pt.
Needs the project's hf extra (transformers, tokenizers) and fortunes.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch
from real_data import fortunes_tsv, train_and_evaluate

from ptgen.project import ProjectOptions, new_project

HERE = Path(__file__).resolve().parent
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def split_corpus(tsv: Path, root: Path) -> list[str]:
    """root/train.tsv and root/val.tsv (80/20, seed 0); returns the training texts."""
    with tsv.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t"))
    header, rows = rows[0], rows[1:]
    random.Random(0).shuffle(rows)
    cut = len(rows) * 4 // 5
    root.mkdir(parents=True)
    for name, part in (("train", rows[:cut]), ("val", rows[cut:])):
        with (root / f"{name}.tsv").open("w", newline="", encoding="utf-8") as f:
            csv.writer(f, delimiter="\t").writerows([header, *part])
    return [text for text, _ in rows[:cut]]


def tokenizer_for(texts: list[str], vocab_size: int = 4000) -> Any:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    wordpiece = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    wordpiece.normalizer = normalizers.BertNormalizer(lowercase=True)
    wordpiece.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    wordpiece.train_from_iterator(
        texts, trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=SPECIALS)
    )
    wordpiece.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    names = ("pad", "unk", "cls", "sep", "mask")
    return PreTrainedTokenizerFast(
        tokenizer_object=wordpiece, **{f"{n}_token": f"[{n.upper()}]" for n in names}
    )


def masked_lm(texts: list[str], tokenizer: Any, epochs: int, seed: int = 0) -> tuple[Any, Any]:
    """A small BERT trained by masked language modelling on `texts`: 15% of the real tokens
    chosen, 80% of those replaced by [MASK], 10% by a random token, 10% kept."""
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=256,
    )
    model = BertForMaskedLM(config)
    untrained = BertForMaskedLM(config).bert  # the other contender: same size, same init law
    encoded = tokenizer(texts, truncation=True, max_length=64)["input_ids"]
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.01)
    model.train()
    for epoch in range(epochs):
        order = torch.randperm(len(encoded)).tolist()
        total = 0.0
        for start in range(0, len(order) - 31, 32):
            batch = tokenizer.pad(
                {"input_ids": [encoded[i] for i in order[start : start + 32]]}, return_tensors="pt"
            )
            inputs, labels = mask_tokens(batch["input_ids"], tokenizer)
            loss = model(
                input_ids=inputs, attention_mask=batch["attention_mask"], labels=labels
            ).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            total += float(loss.detach())
        print(f"mlm epoch {epoch + 1}/{epochs}: loss {total / (len(order) // 32):.3f}", flush=True)
    return model.bert, untrained


def mask_tokens(ids: torch.Tensor, tokenizer: Any) -> tuple[torch.Tensor, torch.Tensor]:
    special = torch.tensor([[t in tokenizer.all_special_ids for t in row] for row in ids.tolist()])
    chosen = (torch.rand(ids.shape) < 0.15) & ~special  # (B, T)
    labels = torch.where(chosen, ids, torch.full_like(ids, -100))
    roll = torch.rand(ids.shape)
    inputs = ids.clone()
    inputs[chosen & (roll < 0.8)] = tokenizer.mask_token_id
    swap = chosen & (roll >= 0.8) & (roll < 0.9)
    inputs[swap] = torch.randint(len(tokenizer), ids.shape)[swap]
    return inputs, labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=Path("/tmp/ptgen-hf-pretrain"))
    parser.add_argument("--mlm-epochs", type=int, default=20)
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--json", type=Path, default=HERE / "bench_hf_pretrain.json")
    args = parser.parse_args()
    if args.out_dir.exists():
        sys.exit(f"{args.out_dir} exists; pass a fresh --out-dir")
    work, seeds = args.out_dir, [int(s) for s in args.seeds.split(",")]
    texts = split_corpus(fortunes_tsv(work / "fortunes.tsv"), work / "data")
    tokenizer = tokenizer_for(texts)
    start = time.perf_counter()
    pretrained, untrained = masked_lm(texts, tokenizer, args.mlm_epochs)
    mlm_seconds = time.perf_counter() - start
    for name, encoder in (("mlm", pretrained), ("untrained", untrained)):
        encoder.save_pretrained(work / name)
        tokenizer.save_pretrained(work / name)
    options = ProjectOptions(
        name="fortunes", task="sequence-classification", model="hf-encoder", dataset="hf-text"
    )
    project = new_project(options, work, run_smoke=False).path
    accuracy: dict[str, list[float]] = {"untrained": [], "mlm": []}
    for seed in seeds:
        for name in accuracy:
            settings = [f"data.root={work / 'data'}", f"model.pretrained={work / name}"]
            settings += [f"data.tokenizer={work / name}", f"train.seed={seed}"]
            result, _ = train_and_evaluate(project, "fortunes", settings, f"{name}-{seed}")
            accuracy[name].append(result["accuracy"])
            print(f"seed {seed} {name:10} val accuracy {result['accuracy']:.3f}", flush=True)
    print(f"\n{'encoder':12} {'mean':>6} {'std':>6}")
    for name, values in accuracy.items():
        print(f"{name:12} {statistics.mean(values):6.3f} {statistics.stdev(values):6.3f}")
    result = {
        "accuracy": accuracy,
        "seeds": seeds,
        "mlm_epochs": args.mlm_epochs,
        "mlm_seconds": mlm_seconds,
    }
    result.update(num_train=len(texts), vocab_size=len(tokenizer))
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
