"""`python -m <package> generate`: continue a prompt with the trained language model.

Everything comes from the checkpoint: the model's config and weights, and the tokeniser
saved in the data state (bytes, or the BPE tokeniser trained on the training split); the
training data need not exist. Each new token is drawn from the model's scores for the
next token, divided by `--temperature` (0: always the most likely token) and cut to the
`--top-k` most likely ones (0: all), from a generator seeded with `--seed`: the same
checkpoint, prompt, options and seed give the same text on the same device. The context
is the last `block_size` tokens, the longest the model was trained on. The text is printed
as it is drawn, up to MAX_NEW_TOKENS per call.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import torch
from torch import nn

from .config import ConfigError
from .data._tokens import tokenizer_from_state
from .evaluate import load_inference
from .runtime import Precision

MAX_NEW_TOKENS = 100_000  # one call's most: each token costs a forward pass


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """generate's own options (besides --config and --set)."""
    parser.add_argument("prompt", nargs="?", default="", help="text to continue (default: none)")
    parser.add_argument(
        "--checkpoint", required=True, help="checkpoint file, e.g. runs/default/best.pt"
    )
    parser.add_argument(
        "--max-new-tokens", type=int, default=200, help="tokens to add, printed as they come"
    )
    parser.add_argument(
        "--temperature", type=float, default=1.0, help="divides the scores; 0: greedy (default 1)"
    )
    parser.add_argument(
        "--top-k", type=int, default=0, help="draw among the k most likely tokens (0: all)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the sampling (default 0)")


def generate(args: argparse.Namespace) -> None:
    """Print the prompt, then its continuation token by token, as each is drawn."""
    if not 1 <= args.max_new_tokens <= MAX_NEW_TOKENS:
        raise ConfigError(
            f"--max-new-tokens must be 1 to {MAX_NEW_TOKENS:,}; got {args.max_new_tokens:,} "
            "(for a longer text, continue from the end of what it wrote)"
        )
    if not args.temperature >= 0:
        raise ConfigError(f"--temperature must be 0 or more; got {args.temperature}")
    if args.top_k < 0:
        raise ConfigError(f"--top-k must be 0 (all) or more; got {args.top_k}")
    inference = load_inference(args.checkpoint, args.config, args.overrides)
    tokenizer = tokenizer_from_state(inference.state)
    prompt = tokenizer.encode(args.prompt or "\n").long()  # (P,); no prompt: a line start
    print(args.prompt, end="", flush=True)
    options = (args.max_new_tokens, args.temperature, args.top_k, args.seed)
    model, block_size = inference.model, inference.spec.block_size
    drawn = sample(model, inference.precision, prompt[None, :], *options, block_size)
    pending: list[int] = []  # drawn, not printed yet: a character may need the next token
    for token in drawn:  # (1, 1) each
        pending.append(int(token))
        text = tokenizer.decode(pending)
        if not text.endswith("\ufffd"):  # U+FFFD: a character cut between two tokens
            print(text, end="", flush=True)
            pending = []
    print(tokenizer.decode(pending))


@torch.inference_mode()
def sample(
    model: nn.Module,
    precision: Precision,
    prompt: torch.Tensor,
    max_new_tokens: int,
    temperature: float,
    top_k: int,
    seed: int,
    block_size: int,
) -> Iterator[torch.Tensor]:
    """The `max_new_tokens` tokens drawn after `prompt` (B, P), one (B, 1) at a time."""
    device = precision.device
    generator = torch.Generator(device=device).manual_seed(seed)
    context = prompt[:, -block_size:].to(device)  # (B, <= block_size)
    for _ in range(max_new_tokens):
        with precision.autocast():
            scores = model(inputs=context)[:, -1, :].float()  # (B, vocab), the next token's
        if temperature == 0:
            chosen = scores.argmax(dim=-1, keepdim=True)  # (B, 1)
        else:
            scores = scores / temperature  # (B, vocab)
            if top_k > 0:
                kth = scores.topk(min(top_k, scores.shape[-1]), dim=-1).values[:, -1:]  # (B, 1)
                scores = scores.masked_fill(scores < kth, float("-inf"))  # (B, vocab)
            probabilities = scores.softmax(dim=-1)  # (B, vocab)
            chosen = torch.multinomial(probabilities, 1, generator=generator)  # (B, 1)
        yield chosen.cpu()
        context = torch.cat([context, chosen], dim=1)[:, -block_size:]  # (B, <= block_size)
