    text_column: str = option("", "the text column (empty: the first text column but the label)")
    tokenizer: str = option("", "a Hugging Face tokenizer (hub id or directory); empty: word tokens")
{% from "_lib/parts.jinja" import length_lines with context %}{{ length_lines("dataset/text/dataset.py", "options_bucket") }}
