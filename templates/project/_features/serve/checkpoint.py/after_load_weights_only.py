{% include "_features/predict/checkpoint.py/after_load_weights_only.py" %}
