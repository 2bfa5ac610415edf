    """What the output means: the scores of the next token at every position."""
    return {
        "output": {
            "shape": ["batch", "length", inference.task.vocab_size],
            "meaning": "next-token scores (logits): output[:, t] scores the token after "
            "inputs[:, : t + 1]; softmax over the last dimension for probabilities",
        },
        "vocab_size": inference.task.vocab_size,
        "block_size": inference.spec.block_size,  # the most tokens an input may hold
        "generate": "ids = the last block_size ids of the text; draw the next id from "
        "output[0, -1] of a batch of one; append it; repeat",
    }


def tokenizer_of(state: dict[str, Any]) -> dict[str, Any]:
    """How text becomes the input's token ids and ids become text (the tokeniser saved in
    the checkpoint's data state; none saved: bytes, as the synthetic text is)."""
    tokenizer = tokenizer_from_state(state)
    saved = tokenizer.state()
    if saved["tokenizer"] == "bpe":
        return {
            "kind": "bpe",
            "vocab_size": tokenizer.vocab_size,
            "encode": "tokenizers.Tokenizer.from_str(json).encode(text).ids",
            "decode": "tokenizers.Tokenizer.from_str(json).decode(ids)",
            "json": saved["bpe"],  # the Hugging Face tokenizers file, as a string
        }
    return {
        "kind": saved["tokenizer"],
        "vocab_size": tokenizer.vocab_size,
        "encode": "list(text.encode('utf-8')): every UTF-8 byte is one id",
        "decode": "bytes(ids).decode('utf-8', errors='replace')",
    }
