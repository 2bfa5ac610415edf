{%- if objective == "classification" -%}
from pathlib import Path
{%- endif %}
