{%- if objective == "classification" -%}
import csv
import importlib.util
{%- endif %}
