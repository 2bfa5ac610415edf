{% include "_modalities/text/data/__init__.py/helpers.py" %}
