"""The optimizer, AdamW (others: optim_choices.py), and the learning-rate schedule: stepped once per
