    assert {"accuracy", "macro_f1", "per_class", "confusion_matrix"} <= result.keys()
{%- if "plot" in features %}
    assert Path(result["confusion_matrix_csv"]).is_file()
{%- endif %}
