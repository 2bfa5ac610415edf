{% include "_features/predict/checkpoint.py/imports_after_sys.py" %}
