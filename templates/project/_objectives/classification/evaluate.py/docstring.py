its data prepared with the state saved in the checkpoint, exactly as in training. Per
{%- if "plot" in features %}
class: precision, recall, F1, support; the confusion matrix as CSV (and PNG, with matplotlib).
{%- else %}
class: precision, recall, F1, support.
{%- endif %}
