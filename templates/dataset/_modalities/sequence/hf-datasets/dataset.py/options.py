{%- from "_lib/parts.jinja" import length_lines with context %}
    text_column: str = option("", "the text column (empty: the first text column but the label)")
{{ length_lines("dataset/text/dataset.py", "options_bucket") }}
