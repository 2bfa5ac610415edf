{% if "finetune" in features %}    """AdamW over the trainable parameters (model.freeze leaves some out), or the other
    optimizers of train.optimizer and train.head_lr_multiplier."""
{%- else %}    """AdamW over the trainable parameters, or the other
    optimizers of train.optimizer and train.head_lr_multiplier."""
{%- endif %}
