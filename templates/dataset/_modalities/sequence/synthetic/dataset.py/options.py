{%- from "_lib/parts.jinja" import length_lines with context %}
{{- length_lines("dataset/synthetic/dataset.py", "options") }}
