{%- set when %}    # the model table (train.summary_depth)
    if run.config.train.summary_depth:{% endset -%}
{{ (feature_parts("train.py", "summary_when") or when) | trim("\n") }}
        from .summary import ModelSummary

        depth = run.config.train.summary_depth
        found.append(ModelSummary(run.model, run.val_loader, run.precision, depth))
