{% if "fsdp" in features %}    # the model table (train.summary_depth); not for a sharded model, whose forward needs every rank
    if run.config.train.strategy != "fsdp" and run.config.train.summary_depth:
{%- else %}    # the model table (train.summary_depth)
    if run.config.train.summary_depth:
{%- endif %}
        from .summary import ModelSummary

        depth = run.config.train.summary_depth
        found.append(ModelSummary(run.model, run.val_loader, run.precision, depth))
