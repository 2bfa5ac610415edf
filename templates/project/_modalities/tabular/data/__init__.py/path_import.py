{% include "_modalities/text/data/__init__.py/path_import.py" %}
