{%- if modality == "sequence" -%}
extra; run it with onnxruntime). Both take any batch size and sequence length. Beside the model,
{%- else -%}
extra; run it with onnxruntime). Both take any batch size. Beside the model,
{%- endif %}
FILE.json says what a consumer needs: the inputs (names, dtypes, shapes),
the target's mean and std (value = output * std + mean),
the preprocessing of raw inputs (from the dataset's `raw_inputs`), and the torch and
