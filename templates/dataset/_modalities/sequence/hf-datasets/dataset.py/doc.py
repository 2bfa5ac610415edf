
The texts are the `data.text_column` (default: the first text column that is not the
label), the classes the `data.label_column` (a ClassLabel's names, in its order; text or
integer labels: the values of the training split, sorted). Texts are tokenised as the
"text" kind tokenises them (`_text_files.py`: lower-cased words and punctuation; the
vocabulary, at most data.vocab_size tokens, from the training split) or, with
`data.tokenizer`, by that Hugging Face tokenizer as the "hf-text" kind encodes (needs
transformers: the `hf` extra). Vocabulary or tokenizer, columns and class names go into
`bundle.state` (saved in checkpoints), so evaluation and `predict` encode text exactly
as training did.
{%- from "_lib/parts.jinja" import length_lines with context %}
{{ length_lines("dataset/text/dataset.py", "doc") }}
